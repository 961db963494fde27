package calibrate

import (
	"fmt"
	"maps"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// MoETerms are the two serving terms of MoE models that the kernel tables
// do not time: the least time per MoE layer of an iteration with prompt
// tokens (FloorUs) and a fixed cost per MoE layer of every iteration
// (LayerUs), both in microseconds.
type MoETerms struct {
	FloorUs float64 `json:"prompt_floor_us"`
	LayerUs float64 `json:"layer_us"`
}

func (m MoETerms) String() string {
	return fmt.Sprintf("floor %g us, layer %g us", m.FloorUs, m.LayerUs)
}

// MoEGrid is every pair of terms FitMoETerms tries; the first is none,
// the baseline.
type MoEGrid []MoETerms

// NewMoEGrid pairs every floor with every layer cost.
func NewMoEGrid(floorsUs, layersUs []float64) MoEGrid {
	var g MoEGrid
	for _, f := range floorsUs {
		for _, l := range layersUs {
			g = append(g, MoETerms{FloorUs: f, LayerUs: l})
		}
	}
	return g
}

// DefaultMoEGrid runs from none to a 5 ms floor and an 80 us layer cost,
// past what any measured run asks.
var DefaultMoEGrid = NewMoEGrid([]float64{0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 5000}, []float64{0, 20, 40, 60, 80})

// MoEFold is the terms one backend gets when one group is held out.
type MoEFold struct {
	Held    string       `json:"held"`
	Backend perf.Backend `json:"backend"`
	Terms   MoETerms     `json:"terms"`
	Cases   int          `json:"cases"`
}

// MoEResult is a per-backend choice of the MoE terms, with the
// cross-validated errors that say whether it carries to unseen groups.
type MoEResult struct {
	By     string                    `json:"by"`
	Chosen map[perf.Backend]MoETerms `json:"chosen"`
	Folds  []MoEFold                 `json:"folds"`
	// Without is every case with neither term; HeldOut every case at the
	// terms its backend got from the other groups; InSample at Chosen.
	Without  Report `json:"without"`
	HeldOut  Report `json:"held_out"`
	InSample Report `json:"in_sample"`
	// Coverage scores the intervals Params writes: taken from one half of
	// the groups' held-out predictions, scored on the other, at the tails
	// CalibratedIntervals chose.
	Coverage  Coverage `json:"interval_coverage"`
	intervals *perf.Intervals
}

// MoECases are the cases the terms can change: measured serving runs of
// MoE models, aggregated and disaggregated.
func MoECases(cases []Case) []Case {
	return servingRuns(cases, func(c Case) bool { return !c.Dense })
}

// FitMoETerms predicts cases at every grid point and picks, per backend,
// the terms with the least mean TTFT plus TPOT error. Each group (by
// model, system or campaign) is also held out in turn: its cases are
// scored at the terms picked on the other groups. progress, when set,
// hears of each grid point as it starts.
func FitMoETerms(env estimate.Env, cases []Case, grid MoEGrid, by string, progress func(i, n int, t MoETerms)) (*MoEResult, error) {
	key, err := cvKey(by, env.Catalog)
	if err != nil {
		return nil, err
	}
	if len(grid) == 0 || grid[0] != (MoETerms{}) {
		return nil, fmt.Errorf("moe grid %v: must start at no floor and no layer cost, the baseline", grid)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("moe: no measured MoE serving runs in the data")
	}
	preds := gridPredict(env, cases, grid, func(p *perf.Params, g MoETerms) *perf.Params {
		return withMoETerms(p, func(perf.Backend) MoETerms { return g })
	}, progress)
	pick := func(keep func(Case) bool) (int, int) { return gridPick(preds, cases, keep) }
	res := &MoEResult{By: by, Chosen: map[perf.Backend]MoETerms{}}
	chosen := map[perf.Backend]int{}
	for _, b := range perf.Backends {
		if i, n := pick(func(c Case) bool { return caseBackend(c) == b }); n > 0 {
			chosen[b], res.Chosen[b] = i, grid[i]
		}
	}
	held := make([]Prediction, len(cases))
	for _, f := range gridFolds(cases, key, pick) {
		for _, j := range f.cases {
			held[j] = preds[f.index][j]
		}
		res.Folds = append(res.Folds, MoEFold{Held: f.held, Backend: f.backend, Terms: grid[f.index], Cases: len(f.cases)})
	}
	in := make([]Prediction, len(cases))
	for j, c := range cases {
		in[j] = preds[chosen[caseBackend(c)]][j]
	}
	res.Without, res.HeldOut, res.InSample = Summarise(preds[0], 0), Summarise(held, 0), Summarise(in, 0)
	if res.intervals, res.Coverage, err = CalibratedIntervals(held, by, env, ""); err != nil {
		return nil, err
	}
	return res, nil
}

// Params is start with the chosen terms, and the MoE kinds' intervals
// taken from the held-out predictions (the others kept).
func (r *MoEResult) Params(start *perf.Params) *perf.Params {
	p := withMoETerms(start, func(b perf.Backend) MoETerms { return r.Chosen[b] })
	fresh := r.intervals
	iv := &perf.Intervals{Kinds: map[string]*perf.IntervalKind{}, KernelKinds: map[string]*perf.IntervalKind{}}
	if p.Intervals != nil {
		iv.Source = p.Intervals.Source
		maps.Copy(iv.Kinds, p.Intervals.Kinds)
		maps.Copy(iv.KernelKinds, p.Intervals.KernelKinds)
	}
	maps.Copy(iv.Kinds, fresh.Kinds)
	maps.Copy(iv.KernelKinds, fresh.KernelKinds)
	if note := fmt.Sprintf("; MoE kinds: gpuplane calibrate moe, terms held out by %s", r.By); !strings.Contains(iv.Source, note) {
		iv.Source += note
	}
	p.Intervals = iv
	return p
}

// withMoETerms is a copy of p with each backend's terms set by terms.
func withMoETerms(p *perf.Params, terms func(perf.Backend) MoETerms) *perf.Params {
	q := p.Clone() // a deep copy
	for b, bp := range q.Backends {
		t := terms(b)
		bp.MoEPromptFloorUs, bp.MoELayerUs = t.FloorUs, t.LayerUs
	}
	return q
}
