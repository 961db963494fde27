package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultTTFTFloorGrid is every TTFT floor per routed expert of a MoE layer
// FitTerm tries for TTFTFloorTerm, in us: none, the baseline, to 32 us
// (about 480 ms for DeepSeek-R1's 58 layers of 256 experts, past the
// light-load gaps the measured runs show).
var DefaultTTFTFloorGrid = []float64{0, 2, 4, 8, 12, 16, 20, 24, 32}

// TTFTFloorTerm is the least TTFT a request to a MoE model sees, per routed
// expert of each MoE layer (perf.BackendParams.MoETTFTFloorExpertUs).
var TTFTFloorTerm = Term{
	Name: "ttft-floor", Unit: "us an expert of a MoE layer", Max: 10000,
	Set:     func(bp *perf.BackendParams, v float64) { bp.MoETTFTFloorExpertUs = v },
	Source:  "; MoE TTFT floors: gpuplane calibrate ttft-floor",
	NoCases: "no measured MoE serving runs in the data",
}
