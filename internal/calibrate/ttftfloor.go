package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultTTFTFloorGrid is every TTFT floor per MoE layer FitTerm tries for
// TTFTFloorTerm, in us: none, the baseline, to 4 ms a layer (about 240 ms
// for a 60-layer model, past the light-load gaps the measured runs show).
var DefaultTTFTFloorGrid = []float64{0, 250, 500, 1000, 1500, 2000, 2500, 3000, 4000}

// TTFTFloorTerm is the least TTFT a request to a MoE model sees, per MoE
// layer (perf.BackendParams.MoETTFTFloorUs).
var TTFTFloorTerm = Term{
	Name: "ttft-floor", Unit: "us a MoE layer", Max: 100000,
	Set:     func(bp *perf.BackendParams, v float64) { bp.MoETTFTFloorUs = v },
	Source:  "; MoE TTFT floors: gpuplane calibrate ttft-floor",
	NoCases: "no measured MoE serving runs in the data",
}
