package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultADPGrid is every attention-DP hold FitADP tries, in iterations:
// none, the baseline, to 160, past the timeouts engines ship with.
var DefaultADPGrid = []float64{0, 10, 20, 30, 40, 50, 60, 80, 100, 120, 160}

// ADPTerm is how long an attention-DP rank holds a prompt for its peers
// (perf.BackendParams.ADPBalanceIters).
var ADPTerm = Term{
	Name: "adp", Unit: "iterations", Max: 10000, Whole: true,
	Set:     func(bp *perf.BackendParams, v float64) { bp.ADPBalanceIters = int(v) },
	Source:  "; attention-DP holds: gpuplane calibrate adp",
	NoCases: "no measured aggregated runs with attention data parallelism (dp > 1) in the data",
}

// ADPCases are the measured aggregated serving runs with attention data
// parallelism, the only runs the hold touches.
func ADPCases(cases []Case) []Case {
	return servingRuns(cases, func(c Case) bool { return c.Mode == "agg" && c.Query.DP > 1 })
}

// FitADP chooses each backend's attention-DP hold on the attention-DP
// runs (see FitTerm). Grid values must be whole iterations.
func FitADP(env estimate.Env, cases []Case, grid []float64, by []string, progress func(i, n int, iters float64)) (*TermResult, error) {
	return FitTerm(env, cases, ADPTerm, grid, by, progress)
}
