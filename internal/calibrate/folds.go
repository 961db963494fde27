package calibrate

import (
	"sort"

	"github.com/gpuplane/gpuplane/internal/perf"
)

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
	backend := func(c Case) perf.Backend { b, _ := perf.ParseBackend(c.Backend); return b }
	names, _ := groupBy(cases, key)
	sort.Strings(names)
	var out []fold
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
