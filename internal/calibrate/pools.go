package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultPoolsGrid is every decode knee FitPools tries, as factors over a
// lone sequence's step: 0 (the built-in perf.DefaultPoolKnee, the
// baseline), then from a step barely slower than a lone sequence's to one
// twelve times as long.
var DefaultPoolsGrid = []float64{0, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 12}

// PoolsTerm is the decode knee that sizes the pools of a disaggregated
// query without worker counts (perf.BackendParams.PoolKnee).
var PoolsTerm = Term{
	Name: "pools", Unit: "x a lone sequence's step", Min: 1, Max: 1000,
	Set:     func(bp *perf.BackendParams, v float64) { bp.PoolKnee = v },
	Source:  "; decode knees of sized pools: gpuplane calibrate pools",
	NoCases: "no measured disaggregated runs without worker counts in the data",
}

// PoolsCases are the measured disaggregated runs that give neither pool's
// worker count, the only runs whose pools the estimate sizes itself.
func PoolsCases(cases []Case) []Case {
	return servingRuns(cases, func(c Case) bool {
		return c.Mode == "disagg" && c.Query.PrefillWorkers == 0 && c.Query.DecodeWorkers == 0
	})
}

// FitPools chooses each backend's decode knee on the runs without worker
// counts (see FitTerm).
func FitPools(env estimate.Env, cases []Case, grid []float64, by []string, progress func(i, n int, knee float64)) (*TermResult, error) {
	return FitTerm(env, cases, PoolsTerm, grid, by, progress)
}
