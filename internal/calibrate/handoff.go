package calibrate

import (
	"fmt"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultHandoffGrid is every hand-off cost FitHandoff tries, in ms: none,
// the baseline, to 200 ms, past the light-load gaps the measured
// disaggregated runs show.
var DefaultHandoffGrid = []float64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 120, 140, 160, 180, 200}

// HandoffFold is the cost one backend gets when one group is held out.
type HandoffFold struct {
	Held      string       `json:"held"`
	Backend   perf.Backend `json:"backend"`
	HandoffMs float64      `json:"handoff_ms"`
	Cases     int          `json:"cases"`
}

// HandoffHeldOut is every run scored at the cost its backend got with its
// group (by model, system or campaign) held out.
type HandoffHeldOut struct {
	By     string        `json:"by"`
	Folds  []HandoffFold `json:"folds"`
	Report Report        `json:"report"`
	// Loss is the mean TTFT plus TPOT error per backend (what the choice
	// minimises).
	Loss map[perf.Backend]float64 `json:"loss"`
}

// HandoffResult is a per-backend choice of the disaggregated hand-off
// cost with the cross-validated errors that decide whether it is kept.
type HandoffResult struct {
	// Picked is each backend's best cost over all its runs; Chosen is
	// Picked where the held-out runs are better with it than without under
	// every grouping, else 0: a cost that does not carry to unseen groups
	// is not kept.
	Picked map[perf.Backend]float64 `json:"picked"`
	Chosen map[perf.Backend]float64 `json:"chosen"`
	// Without is every run with no cost, Kept every run at Chosen.
	Without     Report                   `json:"without"`
	WithoutLoss map[perf.Backend]float64 `json:"without_loss"`
	Kept        Report                   `json:"kept"`
	HeldOut     []HandoffHeldOut         `json:"held_out"`
}

// DisaggCases are the measured disaggregated serving runs.
func DisaggCases(cases []Case) []Case {
	var out []Case
	for _, c := range cases {
		if c.Source == "silicon" && c.Mode == "disagg" {
			if _, err := perf.ParseBackend(c.Backend); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// FitHandoff predicts the disaggregated runs at every cost of grid and
// picks, per backend, the cost with the least mean TTFT plus TPOT error.
// Under each grouping of by (model, system, campaign) each group is held
// out in turn and scored at the cost picked on the others; a backend keeps
// its cost only if its held-out runs come out better than with none under
// every grouping.
func FitHandoff(env estimate.Env, cases []Case, grid []float64, by []string, progress func(i, n int, ms float64)) (*HandoffResult, error) {
	if len(by) == 0 {
		return nil, fmt.Errorf("handoff: name at least one grouping to hold out (model, system or campaign)")
	}
	keys := make([]func(Case) string, len(by))
	for i, b := range by {
		k, err := cvKey(b, env.Catalog)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	if len(grid) == 0 || grid[0] != 0 {
		return nil, fmt.Errorf("handoff grid %v: must start at 0 ms, the baseline", grid)
	}
	for _, ms := range grid {
		if !(ms >= 0 && ms <= 10000) {
			return nil, fmt.Errorf("handoff grid: %g ms must be in [0, 10000]", ms)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("handoff: no measured disaggregated serving runs in the data")
	}
	preds := gridPredict(env, cases, grid, func(p *perf.Params, ms float64) *perf.Params {
		return withHandoff(p, func(perf.Backend) float64 { return ms })
	}, progress)
	pick := func(keep func(Case) bool) (int, int) { return gridPick(preds, cases, keep) }
	res := &HandoffResult{Picked: map[perf.Backend]float64{}, Chosen: map[perf.Backend]float64{}, WithoutLoss: map[perf.Backend]float64{}}
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
		ho := HandoffHeldOut{By: by[gi], Loss: map[perf.Backend]float64{}}
		held := make([]Prediction, len(cases))
		for _, f := range gridFolds(cases, key, pick) {
			for _, j := range f.cases {
				held[j] = preds[f.index][j]
			}
			ho.Folds = append(ho.Folds, HandoffFold{Held: f.held, Backend: f.backend, HandoffMs: grid[f.index], Cases: len(f.cases)})
		}
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

// handoffSource is what Params adds to the parameters' source line.
const handoffSource = "; disaggregated hand-off costs: gpuplane calibrate handoff"

// Params is start with the chosen costs.
func (r *HandoffResult) Params(start *perf.Params) *perf.Params {
	p := withHandoff(start, func(b perf.Backend) float64 { return r.Chosen[b] })
	if !strings.Contains(p.Source, handoffSource) {
		p.Source += handoffSource
	}
	return p
}

// withHandoff is a copy of p with each backend's hand-off cost set.
func withHandoff(p *perf.Params, ms func(perf.Backend) float64) *perf.Params {
	q := p.Clone()
	for b, bp := range q.Backends {
		bp.HandoffMs = ms(b)
	}
	return q
}
