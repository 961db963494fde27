package calibrate

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

func TestFitPools(t *testing.T) {
	ds, env := loadShared(t)
	var cases []Case
	per := map[string]int{}
	for _, cs := range PoolsCases(ds.Cases) {
		if cs.Mode != "disagg" || cs.Query.PrefillWorkers != 0 || cs.Query.DecodeWorkers != 0 {
			t.Fatalf("PoolsCases gave %s (mode %s, %d prefill and %d decode workers)", cs.ID, cs.Mode, cs.Query.PrefillWorkers, cs.Query.DecodeWorkers)
		}
		if k := cs.Backend; per[k] < 3 {
			per[k]++
			cases = append(cases, cs)
		}
	}
	if len(cases) == 0 {
		t.Skip("no disaggregated runs without worker counts in the shared data")
	}
	for _, cs := range DisaggCases(ds.Cases) {
		if cs.Query.PrefillWorkers > 0 {
			found := false
			for _, p := range PoolsCases(ds.Cases) {
				found = found || p.ID == cs.ID
			}
			if found {
				t.Fatalf("PoolsCases kept %s, which gives its worker counts", cs.ID)
			}
			break
		}
	}
	res, err := FitPools(env, cases, []float64{0, 1.5, 8}, []string{"model"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTermWrites(t, res, env, func(bp *perf.BackendParams) float64 { return bp.PoolKnee })
	for _, tc := range []struct {
		grid []float64
		want string
	}{
		{[]float64{0, 0.5}, "or at least 1"},
		{[]float64{2}, "must start at 0"},
		{[]float64{0, 5000}, "must be in [0, 1000]"},
	} {
		if _, err := FitPools(env, cases, tc.grid, []string{"model"}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("grid %v: %v, want %q", tc.grid, err, tc.want)
		}
	}
	if _, err := FitPools(env, nil, []float64{0}, []string{"model"}, nil); err == nil || !strings.Contains(err.Error(), "without worker counts") {
		t.Errorf("no cases: %v", err)
	}
}

// firstPerBackend is the first n of cases of each backend, in order: a
// term search's test over a few runs of each.
func firstPerBackend(cases []Case, n int) []Case {
	var out []Case
	per := map[string]int{}
	for _, c := range cases {
		if per[c.Backend] < n {
			per[c.Backend]++
			out = append(out, c)
		}
	}
	return out
}

// checkTermWrites checks that a term search's parameters carry the values
// it chose (value reads one) and are valid.
func checkTermWrites(t *testing.T, res *TermResult, env estimate.Env, value func(*perf.BackendParams) float64) {
	t.Helper()
	p := res.Params(env.Params)
	for b, v := range res.Chosen {
		if got := value(p.Backends[b]); got != v {
			t.Errorf("written %s %g, chose %g", b, got, v)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}
