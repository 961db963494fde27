package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultHandoffGrid is every hand-off cost FitHandoff tries, in ms: none,
// the baseline, to 200 ms, past the light-load gaps the measured
// disaggregated runs show.
var DefaultHandoffGrid = []float64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 120, 140, 160, 180, 200}

// HandoffTerm is the fixed cost of a disaggregated hand-off
// (perf.BackendParams.HandoffMs).
var HandoffTerm = Term{
	Name: "handoff", Unit: "ms", Max: 10000,
	Set:     func(bp *perf.BackendParams, v float64) { bp.HandoffMs = v },
	Source:  "; disaggregated hand-off costs: gpuplane calibrate handoff",
	NoCases: "no measured disaggregated serving runs in the data",
}

// DisaggCases are the measured disaggregated serving runs.
func DisaggCases(cases []Case) []Case {
	return servingRuns(cases, func(c Case) bool { return c.Mode == "disagg" })
}

// FitHandoff chooses each backend's hand-off cost on the disaggregated
// runs (see FitTerm).
func FitHandoff(env estimate.Env, cases []Case, grid []float64, by []string, progress func(i, n int, ms float64)) (*TermResult, error) {
	return FitTerm(env, cases, HandoffTerm, grid, by, progress)
}
