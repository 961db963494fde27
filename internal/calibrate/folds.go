package calibrate

import (
	"sort"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// gridPredict predicts cases at every point of grid, with the parameters
// with gives for the point; progress, when set, hears of each point as it
// starts.
func gridPredict[T any](env estimate.Env, cases []Case, grid []T, with func(*perf.Params, T) *perf.Params, progress func(i, n int, g T)) [][]Prediction {
	preds := make([][]Prediction, len(grid))
	for i, g := range grid {
		if progress != nil {
			progress(i+1, len(grid), g)
		}
		e := env
		e.Params = with(env.Params, g)
		preds[i] = Predict(e, cases)
	}
	return preds
}

// caseBackend is the case's backend; the searches keep only cases whose
// backend parses (servingRuns).
func caseBackend(c Case) perf.Backend { b, _ := perf.ParseBackend(c.Backend); return b }

// servingRuns are the measured serving runs (not max-throughput tables)
// of a backend the model knows that keep admits: what the serving-term
// searches predict.
func servingRuns(cases []Case, keep func(Case) bool) []Case {
	var out []Case
	for _, c := range cases {
		if c.Source == "silicon" && keep(c) {
			if _, err := perf.ParseBackend(c.Backend); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// fold is one group of one backend held out: its cases (indices) and the
// grid point picked on the backend's other groups.
type fold struct {
	held    string
	backend perf.Backend
	index   int
	cases   []int
}

// gridFolds holds each group of key out in turn, per backend, and picks a
// grid point on the backend's other cases with pick (0, the baseline, when
// the backend has no other group). Folds come sorted by group, then backend.
func gridFolds(cases []Case, key func(Case) string, pick func(keep func(Case) bool) (int, int)) []fold {
	names, _ := groupBy(cases, key)
	sort.Strings(names)
	var out []fold
	for _, g := range names {
		for _, b := range perf.Backends {
			var test []int
			for j, c := range cases {
				if key(c) == g && caseBackend(c) == b {
					test = append(test, j)
				}
			}
			if len(test) == 0 {
				continue
			}
			i, n := pick(func(c Case) bool { return key(c) != g && caseBackend(c) == b })
			if n == 0 {
				i = 0 // nothing else measured on this backend
			}
			out = append(out, fold{held: g, backend: b, index: i, cases: test})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].held != out[j].held {
			return out[i].held < out[j].held
		}
		return out[i].backend < out[j].backend
	})
	return out
}

// gridLoss is the mean TTFT plus TPOT error (percent each) of ps over the
// answered cases keep admits, and how many there were.
func gridLoss(ps []Prediction, cases []Case, keep func(Case) bool) (float64, int) {
	var sum float64
	var n int
	for j, c := range cases {
		if p := ps[j]; p.Err == "" && keep(c) && p.TTFTms > 0 && p.TPOTms > 0 {
			sum += ape(p.PredTTFTms, p.TTFTms) + ape(p.PredTPOTms, p.TPOTms)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// gridPick is the grid point (an index of preds, the cases predicted at
// each point) with the least gridLoss over the cases keep admits, and how
// many cases scored it; 0 and 0 when none does.
func gridPick(preds [][]Prediction, cases []Case, keep func(Case) bool) (int, int) {
	best, bestLoss, bestN := 0, 0.0, 0
	for i := range preds {
		if l, n := gridLoss(preds[i], cases, keep); n > 0 && (bestN == 0 || l < bestLoss) {
			best, bestLoss, bestN = i, l, n
		}
	}
	return best, bestN
}
