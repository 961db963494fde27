package calibrate

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultADPGrid is every attention-DP hold FitADP tries, in iterations:
// none, the baseline, to 160, past the timeouts engines ship with.
var DefaultADPGrid = []float64{0, 10, 20, 30, 40, 50, 60, 80, 100, 120, 160}

// ADPTerm is how long an attention-DP rank holds a prompt for its peers
// (perf.BackendParams.ADPBalanceIters).
var ADPTerm = Term{
	Name: "adp", Unit: "iterations", Max: 10000,
	Set:     func(bp *perf.BackendParams, v float64) { bp.ADPBalanceIters = int(v) },
	Source:  "; attention-DP holds: gpuplane calibrate adp",
	NoCases: "no measured aggregated runs with attention data parallelism (dp > 1) in the data",
}

// ADPCases are the measured aggregated serving runs with attention data
// parallelism, the only runs the hold touches.
func ADPCases(cases []Case) []Case {
	var out []Case
	for _, c := range cases {
		if c.Source == "silicon" && c.Mode == "agg" && c.Query.DP > 1 {
			if _, err := perf.ParseBackend(c.Backend); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// FitADP chooses each backend's attention-DP hold on the attention-DP
// runs (see FitTerm). Grid values must be whole iterations.
func FitADP(env estimate.Env, cases []Case, grid []float64, by []string, progress func(i, n int, iters float64)) (*TermResult, error) {
	for _, v := range grid {
		if v != math.Trunc(v) && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return nil, fmt.Errorf("adp grid: %g is not a whole number of iterations", v)
		}
	}
	return FitTerm(env, cases, ADPTerm, grid, by, progress)
}
