package calibrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// MoEFloorGrid are the prompt floors per MoE layer (microseconds) that
// FitMoEFloor tries: from none to 5 ms, past what any measured run asks.
var MoEFloorGrid = []float64{0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000}

// FloorFold is the floor one backend gets when one group is held out.
type FloorFold struct {
	Held    string       `json:"held"`
	Backend perf.Backend `json:"backend"`
	FloorUs float64      `json:"floor_us"`
	Cases   int          `json:"cases"`
}

// FloorResult is a per-backend choice of the MoE prompt floor, with the
// cross-validated errors that say whether it carries to unseen groups.
type FloorResult struct {
	By     string                   `json:"by"`
	Chosen map[perf.Backend]float64 `json:"chosen_us"`
	Folds  []FloorFold              `json:"folds"`
	// Without is every case with no floor; HeldOut every case at the floor
	// its backend got from the other groups; InSample at Chosen.
	Without, HeldOut, InSample Report
	// Coverage scores the intervals Params writes: taken from one half of
	// the groups' held-out predictions, scored on the other.
	Coverage Coverage `json:"interval_coverage"`
}

// MoEFloorCases are the cases the floor can change: measured serving runs
// of MoE models, aggregated and disaggregated.
func MoEFloorCases(cases []Case) []Case {
	var out []Case
	for _, c := range cases {
		if c.Source == "silicon" && !c.Dense {
			if _, err := perf.ParseBackend(c.Backend); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// FitMoEFloor predicts cases at every grid value and picks, per backend,
// the floor with the least mean TTFT plus TPOT error. Each group (by
// model, system or campaign) is also held out in turn: its cases are
// scored at the floor picked on the other groups. progress, when set,
// hears of each grid value as it starts.
func FitMoEFloor(env estimate.Env, cases []Case, grid []float64, by string, progress func(i, n int, floorUs float64)) (*FloorResult, error) {
	key, err := cvKey(by, env.Catalog)
	if err != nil {
		return nil, err
	}
	if len(grid) == 0 || grid[0] != 0 {
		return nil, fmt.Errorf("moe-floor grid %v: must start at 0 (no floor), the baseline", grid)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("moe-floor: no measured MoE serving runs in the data")
	}
	preds := make([][]Prediction, len(grid))
	for i, v := range grid {
		if progress != nil {
			progress(i+1, len(grid), v)
		}
		e := env
		e.Params = withMoEFloor(env.Params, func(perf.Backend) float64 { return v })
		preds[i] = Predict(e, cases)
	}
	backend := func(c Case) perf.Backend { b, _ := perf.ParseBackend(c.Backend); return b }
	// pick is the grid index with the least loss over the cases keep admits.
	pick := func(keep func(Case) bool) (int, int) {
		best, bestLoss, n := 0, 0.0, 0
		for i := range grid {
			var loss float64
			var m int
			for j, p := range preds[i] {
				if p.Err == "" && keep(cases[j]) && p.TTFTms > 0 && p.TPOTms > 0 {
					loss += ape(p.PredTTFTms, p.TTFTms) + ape(p.PredTPOTms, p.TPOTms)
					m++
				}
			}
			if m == 0 {
				continue
			}
			if loss /= float64(m); n == 0 || loss < bestLoss {
				best, bestLoss, n = i, loss, m
			}
		}
		return best, n
	}
	res := &FloorResult{By: by, Chosen: map[perf.Backend]float64{}}
	chosen := map[perf.Backend]int{}
	for _, b := range perf.Backends {
		if i, n := pick(func(c Case) bool { return backend(c) == b }); n > 0 {
			chosen[b], res.Chosen[b] = i, grid[i]
		}
	}
	names, _ := groupBy(cases, key)
	held := make([]Prediction, len(cases))
	for _, g := range names {
		for _, b := range perf.Backends {
			var test []int
			for j, c := range cases {
				if key(c) == g && backend(c) == b {
					test = append(test, j)
				}
			}
			if len(test) == 0 {
				continue
			}
			i, n := pick(func(c Case) bool { return key(c) != g && backend(c) == b })
			if n == 0 {
				i = 0 // nothing else measured on this backend: no floor
			}
			for _, j := range test {
				held[j] = preds[i][j]
			}
			res.Folds = append(res.Folds, FloorFold{Held: g, Backend: b, FloorUs: grid[i], Cases: len(test)})
		}
	}
	sort.Slice(res.Folds, func(i, j int) bool {
		if res.Folds[i].Held != res.Folds[j].Held {
			return res.Folds[i].Held < res.Folds[j].Held
		}
		return res.Folds[i].Backend < res.Folds[j].Backend
	})
	in := make([]Prediction, len(cases))
	for j, c := range cases {
		in[j] = preds[chosen[backend(c)]][j]
	}
	res.Without, res.HeldOut, res.InSample = Summarise(preds[0], 0), Summarise(held, 0), Summarise(in, 0)
	if res.Coverage, err = CrossCoverage(held, by, env); err != nil {
		return nil, err
	}
	return res, nil
}

// Params is start with the chosen floors, and the MoE kinds' intervals
// taken from the held-out predictions (the others kept).
func (r *FloorResult) Params(start *perf.Params) *perf.Params {
	p := withMoEFloor(start, func(b perf.Backend) float64 { return r.Chosen[b] })
	fresh := Intervals(r.HeldOut.Prediction, "")
	iv := &perf.Intervals{Kinds: map[string]*perf.IntervalKind{}}
	if p.Intervals != nil {
		iv.Source = p.Intervals.Source
		for k, v := range p.Intervals.Kinds {
			iv.Kinds[k] = v
		}
	}
	for k, v := range fresh.Kinds {
		iv.Kinds[k] = v
	}
	if note := fmt.Sprintf("; MoE kinds: gpuplane calibrate moe-floor, floors held out by %s", r.By); !strings.Contains(iv.Source, note) {
		iv.Source += note
	}
	p.Intervals = iv
	return p
}

// withMoEFloor is a copy of p with each backend's floor set by floor.
func withMoEFloor(p *perf.Params, floor func(perf.Backend) float64) *perf.Params {
	q := p.Clone() // a deep copy
	for b, bp := range q.Backends {
		bp.MoEPromptFloorUs = floor(b)
	}
	return q
}
