package calibrate

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Term is one serving-term number per backend that a search chooses on
// measured runs and keeps only where it carries to held-out groups: the
// disaggregated hand-off cost, the attention-DP hold.
type Term struct {
	// Name and Unit label errors and reports ("handoff", "ms").
	Name, Unit string
	// Max bounds the grid (the parameter file's own bound); Whole says the
	// parameter takes whole numbers only.
	Max   float64
	Whole bool
	// Min is the least value other than 0 (the baseline) the parameter
	// takes, where that is above 0.
	Min float64
	// Set writes v into one backend's parameters.
	Set func(bp *perf.BackendParams, v float64)
	// Source is what Params adds to the parameters' source line.
	Source string
	// NoCases is the error when no measured run exercises the term.
	NoCases string
}

// TermFold is the value one backend gets when one group is held out.
type TermFold struct {
	Held    string       `json:"held"`
	Backend perf.Backend `json:"backend"`
	Value   float64      `json:"value"`
	Cases   int          `json:"cases"`
}

// TermHeldOut is every run scored at the value its backend got with its
// group (by model, system or campaign) held out.
type TermHeldOut struct {
	By     string     `json:"by"`
	Folds  []TermFold `json:"folds"`
	Report Report     `json:"report"`
	// Loss is the mean TTFT plus TPOT error per backend (what the choice
	// minimises).
	Loss map[perf.Backend]float64 `json:"loss"`
}

// TermResult is a per-backend choice of one term with the cross-validated
// errors that decide whether it is kept.
type TermResult struct {
	// Picked is each backend's best value over all its runs; Chosen is
	// Picked where the held-out runs are better with it than without under
	// every grouping, else 0: a value that does not carry to unseen groups
	// is not kept.
	Picked map[perf.Backend]float64 `json:"picked"`
	Chosen map[perf.Backend]float64 `json:"chosen"`
	// Without is every run at 0, Kept every run at Chosen.
	Without     Report                   `json:"without"`
	WithoutLoss map[perf.Backend]float64 `json:"without_loss"`
	Kept        Report                   `json:"kept"`
	HeldOut     []TermHeldOut            `json:"held_out"`

	term Term
}

// FitTerm predicts cases at every value of grid and picks, per backend,
// the value with the least mean TTFT plus TPOT error. Under each grouping
// of by (model, system, campaign) each group is held out in turn and
// scored at the value picked on the others; a backend keeps its value only
// if its held-out runs come out better than at 0 under every grouping.
func FitTerm(env estimate.Env, cases []Case, term Term, grid []float64, by []string, progress func(i, n int, v float64)) (*TermResult, error) {
	keys, err := cvKeys(term.Name, by, env.Catalog)
	if err != nil {
		return nil, err
	}
	if len(grid) == 0 || grid[0] != 0 {
		return nil, fmt.Errorf("%s grid %v: must start at 0 %s, the baseline", term.Name, grid, term.Unit)
	}
	for _, v := range grid {
		if !(v >= 0 && v <= term.Max) {
			return nil, fmt.Errorf("%s grid: %g %s must be in [0, %g]", term.Name, v, term.Unit, term.Max)
		}
		if v != 0 && v < term.Min {
			return nil, fmt.Errorf("%s grid: %g %s must be 0 (the baseline) or at least %g", term.Name, v, term.Unit, term.Min)
		}
		if term.Whole && v != math.Trunc(v) {
			return nil, fmt.Errorf("%s grid: %g is not a whole number of %s", term.Name, v, term.Unit)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s: %s", term.Name, term.NoCases)
	}
	preds := gridPredict(env, cases, grid, func(p *perf.Params, v float64) *perf.Params {
		return term.with(p, func(perf.Backend) float64 { return v })
	}, progress)
	pick := func(keep func(Case) bool) (int, int) { return gridPick(preds, cases, keep) }
	res := &TermResult{Picked: map[perf.Backend]float64{}, Chosen: map[perf.Backend]float64{}, WithoutLoss: map[perf.Backend]float64{}, term: term}
	picked := map[perf.Backend]int{}
	for _, b := range perf.Backends {
		if i, n := pick(func(c Case) bool { return caseBackend(c) == b }); n > 0 {
			picked[b], res.Picked[b] = i, grid[i]
			res.WithoutLoss[b], _ = gridLoss(preds[0], cases, func(c Case) bool { return caseBackend(c) == b })
		}
	}
	carries := map[perf.Backend]bool{}
	for b := range picked {
		carries[b] = true
	}
	for gi, key := range keys {
		ho, held := foldsHeldOut(by[gi], key, cases, preds, grid, pick)
		for b := range picked {
			ho.Loss[b], _ = gridLoss(held, cases, func(c Case) bool { return caseBackend(c) == b })
			carries[b] = carries[b] && ho.Loss[b] < res.WithoutLoss[b]
		}
		ho.Report = Summarise(held, 0)
		res.HeldOut = append(res.HeldOut, ho)
	}
	kept := append([]Prediction(nil), preds[0]...)
	for b, i := range picked {
		if !carries[b] {
			res.Chosen[b] = 0
			continue
		}
		res.Chosen[b] = grid[i]
		for j, c := range cases {
			if caseBackend(c) == b {
				kept[j] = preds[i][j]
			}
		}
	}
	res.Without, res.Kept = Summarise(preds[0], 0), Summarise(kept, 0)
	return res, nil
}

// foldsHeldOut scores each group of key at the grid value picked without it:
// the held-out predictions, and the folds that say which value each got.
func foldsHeldOut(by string, key func(Case) string, cases []Case, preds [][]Prediction, grid []float64,
	pick func(keep func(Case) bool) (int, int)) (TermHeldOut, []Prediction) {
	ho := TermHeldOut{By: by, Loss: map[perf.Backend]float64{}}
	held := make([]Prediction, len(cases))
	for _, f := range gridFolds(cases, key, pick) {
		for _, j := range f.cases {
			held[j] = preds[f.index][j]
		}
		ho.Folds = append(ho.Folds, TermFold{Held: f.held, Backend: f.backend, Value: grid[f.index], Cases: len(f.cases)})
	}
	return ho, held
}

// Params is start with the chosen values (0 for a backend without runs).
func (r *TermResult) Params(start *perf.Params) *perf.Params {
	p := r.term.with(start, func(b perf.Backend) float64 { return r.Chosen[b] })
	if !strings.Contains(p.Source, r.term.Source) {
		p.Source += r.term.Source
	}
	return p
}

// with is a copy of p with each backend's value set.
func (t Term) with(p *perf.Params, v func(perf.Backend) float64) *perf.Params {
	q := p.Clone()
	for b, bp := range q.Backends {
		t.Set(bp, v(b))
	}
	return q
}
