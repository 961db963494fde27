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
// own at every grid point. Each backend gets the terms with the least mean
// TTFT plus TPOT error, each held-out case is the prediction at the terms
// picked without its model, and the written parameters carry the terms
// and keep the intervals of the kinds they do not touch.
func TestFitMoETermsMatchesOracle(t *testing.T) {
	ds, env := loadShared(t)
	// A few short aggregated runs per (model, backend) keep it fast.
	var cases []Case
	per := map[string]int{}
	for _, cs := range MoECases(ds.Cases) {
		k := cs.Model + "/" + cs.Backend
		if cs.Dense || cs.Mode != "agg" || cs.Query.Concurrency > 16 || per[k] >= 3 {
			continue
		}
		per[k]++
		cases = append(cases, cs)
	}
	if len(per) < 4 {
		t.Skipf("need several MoE models and backends, have %v", per)
	}
	grid := NewMoEGrid([]float64{0, 3000}, []float64{0, 50})
	res, err := FitMoETerms(env, cases, grid, "model", nil)
	if err != nil {
		t.Fatal(err)
	}

	key, _ := cvKey("model", env.Catalog)
	type at struct {
		id string
		v  MoETerms
	}
	seen := map[at]Prediction{}
	oracle := func(cs Case, v MoETerms) Prediction {
		if p, ok := seen[at{cs.ID, v}]; ok {
			return p
		}
		e := env
		e.Params = withMoETerms(env.Params, func(perf.Backend) MoETerms { return v })
		p := Predict(e, []Case{cs})[0]
		seen[at{cs.ID, v}] = p
		return p
	}
	loss := func(keep func(Case) bool, v MoETerms) (float64, int) {
		var s float64
		var n int
		for _, cs := range cases {
			if !keep(cs) {
				continue
			}
			if p := oracle(cs, v); p.Err == "" {
				s += ape(p.PredTTFTms, p.TTFTms) + ape(p.PredTPOTms, p.TPOTms)
				n++
			}
		}
		return s / float64(max(n, 1)), n
	}
	best := func(keep func(Case) bool) MoETerms {
		bv, bl := MoETerms{}, math.Inf(1)
		for _, v := range grid {
			if l, n := loss(keep, v); n > 0 && l < bl {
				bv, bl = v, l
			}
		}
		return bv
	}
	for _, b := range perf.Backends {
		want := best(func(cs Case) bool { return cs.Backend == string(b) })
		if got, ok := res.Chosen[b]; ok && got != want {
			t.Errorf("%s: chose %v, oracle %v", b, got, want)
		}
	}
	covered := 0
	for _, f := range res.Folds {
		want := best(func(cs Case) bool { return key(cs) != f.Held && cs.Backend == string(f.Backend) })
		if f.Terms != want {
			t.Errorf("fold %s/%s: %v, oracle %v", f.Held, f.Backend, f.Terms, want)
		}
		covered += f.Cases
	}
	if covered != len(cases) || len(res.HeldOut.Prediction) != len(cases) {
		t.Fatalf("folds cover %d cases, held out %d, want %d", covered, len(res.HeldOut.Prediction), len(cases))
	}
	for i, p := range res.HeldOut.Prediction {
		var terms MoETerms
		for _, f := range res.Folds {
			if f.Held == key(cases[i]) && string(f.Backend) == cases[i].Backend {
				terms = f.Terms
			}
		}
		if want := oracle(cases[i], terms); p.PredTTFTms != want.PredTTFTms || p.PredTPOTms != want.PredTPOTms {
			t.Errorf("case %s held out: TTFT %g, oracle at %v %g", cases[i].ID, p.PredTTFTms, terms, want.PredTTFTms)
		}
	}
	if res.InSample.Overall.TTFTMAPE+res.InSample.Overall.TPOTMAPE > res.Without.Overall.TTFTMAPE+res.Without.Overall.TPOTMAPE+1e-9 {
		t.Errorf("in sample %v worse than no terms %v, which the grid holds", res.InSample.Overall, res.Without.Overall)
	}

	p := res.Params(env.Params)
	for b, v := range res.Chosen {
		if got := (MoETerms{p.Backends[b].MoEPromptFloorUs, p.Backends[b].MoELayerUs}); got != v {
			t.Errorf("written %s %v, chose %v", b, got, v)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for k, v := range env.Params.Intervals.Kinds {
		if strings.Contains(k, "dense") && *p.Intervals.Kinds[k] != *v {
			t.Errorf("kind %s: interval changed to %+v", k, *p.Intervals.Kinds[k])
		}
	}
}

func TestFitMoETermsRejects(t *testing.T) {
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}
	one := []Case{{Source: "silicon", Backend: "sglang", Model: "deepseek-ai/DeepSeek-R1"}}
	none := MoEGrid{{}}
	for _, tc := range []struct {
		grid  MoEGrid
		cases []Case
		by    string
		want  string
	}{
		{NewMoEGrid([]float64{500, 1000}, []float64{0}), one, "model", "must start at no floor"},
		{NewMoEGrid([]float64{0}, []float64{30}), one, "model", "must start at no floor"},
		{nil, one, "model", "must start at no floor"},
		{none, nil, "model", "no measured MoE"},
		{none, one, "backend", "--cv"},
	} {
		if _, err := FitMoETerms(env, tc.cases, tc.grid, tc.by, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("grid %v, %d cases, by %q: %v, want %q", tc.grid, len(tc.cases), tc.by, err, tc.want)
		}
	}
}
