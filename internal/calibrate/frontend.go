package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultFrontendGrid is every share of the API server's time per request
// FitTerm tries for FrontendTerm: none (all of it queues, the baseline)
// to all of it in parallel.
var DefaultFrontendGrid = []float64{0, 0.25, 0.5, 0.75, 1}

// FrontendTerm is the share of the API server's time per request spent in
// parallel rather than in its one-at-a-time queue
// (perf.BackendParams.FrontendParallel). It leaves a lone request's TTFT
// alone and changes only how a burst queues.
var FrontendTerm = Term{
	Name: "frontend", Unit: "of the API server's time in parallel", Max: 1,
	Set:     func(bp *perf.BackendParams, v float64) { bp.FrontendParallel = v },
	Source:  "; API-server parallel shares: gpuplane calibrate frontend",
	NoCases: "no measured serving runs in the data",
}

// ServingCases are every measured serving run (aggregated and
// disaggregated, dense and MoE), which the API server fronts.
func ServingCases(cases []Case) []Case {
	return servingRuns(cases, func(Case) bool { return true })
}
