package calibrate

import (
	"fmt"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultSpecGrid is the acceptance lengths FitSpecAccept tries after 0
// (no drafting, the baseline).
var DefaultSpecGrid = []float64{0, 1.5, 2, 2.5, 3, 3.5, 4}

// SpecResult is an acceptance length chosen on measured runs priced as if
// they drafted k tokens a step, with the held-out errors that say whether
// the runs look drafted at all.
type SpecResult struct {
	Tokens int       `json:"tokens"`
	Grid   []float64 `json:"grid"`
	// Picked is the acceptance length with the least error over all runs
	// (0: the runs come out best without drafting).
	Picked float64 `json:"picked"`
	// Without prices every run without drafting, AtPicked at Picked.
	Without  Report        `json:"without"`
	AtPicked Report        `json:"at_picked"`
	HeldOut  []TermHeldOut `json:"held_out"`
}

// FitSpecAccept prices cases as runs drafting k tokens a step at every
// acceptance length of grid (which starts at 0, no drafting), picks the
// length with the least mean TTFT plus TPOT error, and scores each group
// of by (model, system, campaign) at the length picked on the others. It
// answers what a user's own measured runs say their acceptance length is,
// and whether a set of runs looks drafted: a length that carries to held-
// out groups where none does not.
func FitSpecAccept(env estimate.Env, cases []Case, k int, grid []float64, by []string, progress func(i, n int, a float64)) (*SpecResult, error) {
	if k < 1 || k > perf.MaxSpecTokens {
		return nil, fmt.Errorf("spec-tokens: %d must be 1 to %d", k, perf.MaxSpecTokens)
	}
	if len(grid) == 0 || grid[0] != 0 {
		return nil, fmt.Errorf("acceptance grid %v: must start at 0, no drafting (the baseline)", grid)
	}
	for _, a := range grid[1:] {
		if err := perf.CheckSpec(k, a); err != nil {
			return nil, fmt.Errorf("acceptance grid: %w", err)
		}
	}
	keys, err := cvKeys("spec", by, env.Catalog)
	if err != nil {
		return nil, err
	}
	all := func(Case) bool { return true }
	cases = servingRuns(cases, all)
	if len(cases) == 0 {
		return nil, fmt.Errorf("spec: no measured serving runs match")
	}
	preds := make([][]Prediction, len(grid))
	for i, a := range grid {
		if progress != nil {
			progress(i+1, len(grid), a)
		}
		priced := append([]Case(nil), cases...)
		if a > 0 {
			for j := range priced {
				priced[j].Query.SpecTokens, priced[j].Query.SpecAccept = k, a
			}
		}
		preds[i] = Predict(env, priced)
	}
	best, n := gridPick(preds, cases, all)
	if n == 0 {
		return nil, fmt.Errorf("spec: none of the %d runs could be predicted", len(cases))
	}
	res := &SpecResult{Tokens: k, Grid: grid, Picked: grid[best], Without: Summarise(preds[0], 0), AtPicked: Summarise(preds[best], 0)}
	pick := func(keep func(Case) bool) (int, int) { return gridPick(preds, cases, keep) }
	for gi, key := range keys {
		ho, held := foldsHeldOut(by[gi], key, cases, preds, grid, pick)
		for _, b := range perf.Backends {
			if l, n := gridLoss(held, cases, func(c Case) bool { return caseBackend(c) == b }); n > 0 {
				ho.Loss[b] = l
			}
		}
		ho.Report = Summarise(held, 0)
		res.HeldOut = append(res.HeldOut, ho)
	}
	return res, nil
}

// SpecFilter keeps the runs of a backend, model, mode and concurrency
// range ("" or 0: any).
type SpecFilter struct {
	Backend, Model, Mode string
	MaxConcurrency       int
}

// Apply is the cases f keeps; the model matches by catalog name, so
// aliases and published checkpoints count as the model.
func (f SpecFilter) Apply(env estimate.Env, cases []Case) ([]Case, error) {
	want := ""
	if f.Model != "" {
		m, err := env.Catalog.Model(f.Model)
		if err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
		want = m.Name
	}
	var b perf.Backend
	if f.Backend != "" {
		var err error
		if b, err = perf.ParseBackend(f.Backend); err != nil {
			return nil, fmt.Errorf("--backend: %w", err)
		}
	}
	if f.Mode != "" && f.Mode != "agg" && f.Mode != "disagg" {
		return nil, fmt.Errorf("--mode: %q is not agg or disagg", f.Mode)
	}
	if f.MaxConcurrency < 0 {
		return nil, fmt.Errorf("--max-concurrency: %d must be 0 (any) or more", f.MaxConcurrency)
	}
	var out []Case
	for _, c := range cases {
		if b != "" && caseBackend(c) != b || f.Mode != "" && c.Mode != f.Mode ||
			f.MaxConcurrency > 0 && c.Query.Concurrency > f.MaxConcurrency {
			continue
		}
		if want != "" {
			if m, err := env.Catalog.Model(c.Model); err != nil || m.Name != want {
				continue
			}
		}
		out = append(out, c)
	}
	return out, nil
}
