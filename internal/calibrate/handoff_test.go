package calibrate

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// The search against a brute-force oracle: every case predicted on its
// own at every cost. Each backend picks the cost with the least mean TTFT
// plus TPOT error; each fold the cost picked without its group; a backend
// keeps its cost only if its held-out loss beats none under every grouping.
func TestFitHandoffMatchesOracle(t *testing.T) {
	ds, env := loadShared(t)
	// A few light-load runs per (campaign, backend) keep it fast.
	var cases []Case
	per := map[string]int{}
	for _, cs := range DisaggCases(ds.Cases) {
		k := cs.Campaign + "/" + cs.Backend
		if cs.Query.Concurrency > 32 || per[k] >= 4 {
			continue
		}
		per[k]++
		cases = append(cases, cs)
	}
	if len(per) < 4 {
		t.Skipf("need several campaigns and backends, have %v", per)
	}
	grid := []float64{0, 50, 100}
	by := []string{"campaign", "model"}
	res, err := FitHandoff(env, cases, grid, by, nil)
	if err != nil {
		t.Fatal(err)
	}
	type at struct {
		id string
		ms float64
	}
	seen := map[at]Prediction{}
	oracle := func(cs Case, ms float64) Prediction {
		if p, ok := seen[at{cs.ID, ms}]; ok {
			return p
		}
		e := env
		e.Params = HandoffTerm.with(env.Params, func(perf.Backend) float64 { return ms })
		p := Predict(e, []Case{cs})[0]
		seen[at{cs.ID, ms}] = p
		return p
	}
	lossAt := func(keep func(Case) bool, ms func(Case) float64) float64 {
		var s float64
		var n int
		for _, cs := range cases {
			if p := oracle(cs, ms(cs)); keep(cs) && p.Err == "" && p.TTFTms > 0 && p.TPOTms > 0 {
				s += ape(p.PredTTFTms, p.TTFTms) + ape(p.PredTPOTms, p.TPOTms)
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return s / float64(n)
	}
	best := func(keep func(Case) bool) float64 {
		bv, bl := 0.0, math.Inf(1)
		for _, v := range grid {
			if l := lossAt(keep, func(Case) float64 { return v }); l < bl {
				bv, bl = v, l
			}
		}
		return bv
	}
	for _, b := range perf.Backends {
		of := func(cs Case) bool { return cs.Backend == string(b) }
		picked, ok := res.Picked[b]
		if !ok {
			continue
		}
		if want := best(of); picked != want {
			t.Errorf("%s: picked %g ms, oracle %g", b, picked, want)
		}
		without := lossAt(of, func(Case) float64 { return 0 })
		carries := true
		for i, g := range by {
			key, _ := cvKey(g, env.Catalog)
			foldMs := func(cs Case) float64 {
				return best(func(o Case) bool { return key(o) != key(cs) && o.Backend == cs.Backend })
			}
			held := lossAt(of, foldMs)
			if got := res.HeldOut[i].Loss[b]; math.Abs(got-held) > 1e-9 {
				t.Errorf("%s held out by %s: loss %g, oracle %g", b, g, got, held)
			}
			carries = carries && held < without
		}
		want := 0.0
		if carries {
			want = picked
		}
		if res.Chosen[b] != want {
			t.Errorf("%s: chose %g ms, oracle %g (picked %g, carries %v)", b, res.Chosen[b], want, picked, carries)
		}
	}
	p := res.Params(env.Params)
	for b, v := range res.Chosen {
		if p.Backends[b].HandoffMs != v {
			t.Errorf("written %s %g ms, chose %g", b, p.Backends[b].HandoffMs, v)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Source, "calibrate handoff") {
		t.Errorf("source %q does not say where the costs came from", p.Source)
	}
}

func TestFitHandoffRejects(t *testing.T) {
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}
	one := []Case{{Source: "silicon", Backend: "sglang", Mode: "disagg", Model: "deepseek-ai/DeepSeek-R1"}}
	for _, tc := range []struct {
		grid  []float64
		cases []Case
		by    []string
		want  string
	}{
		{[]float64{50, 100}, one, []string{"campaign"}, "must start at 0 ms"},
		{nil, one, []string{"campaign"}, "must start at 0 ms"},
		{[]float64{0, -5}, one, []string{"campaign"}, "-5 ms must be in [0, 10000]"},
		{[]float64{0, math.NaN()}, one, []string{"campaign"}, "must be in [0, 10000]"},
		{[]float64{0}, nil, []string{"campaign"}, "no measured disaggregated"},
		{[]float64{0}, one, nil, "at least one grouping"},
		{[]float64{0}, one, []string{"backend"}, "--cv"},
	} {
		if _, err := FitHandoff(env, tc.cases, tc.grid, tc.by, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("grid %v, %d cases, by %v: %v, want %q", tc.grid, len(tc.cases), tc.by, err, tc.want)
		}
	}
}

// The attention-DP search takes only aggregated runs with dp > 1, writes
// whole iterations, and refuses a grid it cannot write.
func TestFitADP(t *testing.T) {
	ds, env := loadShared(t)
	var cases []Case
	per := map[string]int{}
	for _, cs := range ADPCases(ds.Cases) {
		if cs.Mode != "agg" || cs.Query.DP < 2 {
			t.Fatalf("ADPCases gave %s (mode %s, dp %d)", cs.ID, cs.Mode, cs.Query.DP)
		}
		if k := cs.Backend; per[k] < 4 {
			per[k]++
			cases = append(cases, cs)
		}
	}
	if len(cases) == 0 {
		t.Skip("no attention-DP runs in the shared data")
	}
	res, err := FitADP(env, cases, []float64{0, 20, 50}, []string{"model"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Params(env.Params)
	for b, v := range res.Chosen {
		if float64(p.Backends[b].ADPBalanceIters) != v {
			t.Errorf("written %s %d iterations, chose %g", b, p.Backends[b].ADPBalanceIters, v)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		grid []float64
		want string
	}{
		{[]float64{0, 12.5}, "not a whole number"},
		{[]float64{10}, "must start at 0 iterations"},
		{[]float64{0, 20000}, "must be in [0, 10000]"},
	} {
		if _, err := FitADP(env, cases, tc.grid, []string{"model"}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("grid %v: %v, want %q", tc.grid, err, tc.want)
		}
	}
	if _, err := FitADP(env, nil, []float64{0}, []string{"model"}, nil); err == nil || !strings.Contains(err.Error(), "attention data parallelism") {
		t.Errorf("no cases: %v", err)
	}
}
