package calibrate

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// The floor search against a brute-force oracle: every case predicted on
// its own at every floor. Each backend gets the floor with the least mean
// TTFT plus TPOT error, each held-out case is the prediction at the floor
// picked without its model, and the written parameters carry the floors
// and keep the intervals of the kinds the floor does not touch.
func TestFitMoEFloorMatchesOracle(t *testing.T) {
	c := catalog.MustDefault()
	ds, err := LoadDir(sharedtest.Path(t, "calibration"), c)
	if err != nil {
		t.Fatal(err)
	}
	// A few short aggregated runs per (model, backend) keep it fast.
	var cases []Case
	per := map[string]int{}
	for _, cs := range MoEFloorCases(ds.Cases) {
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
	env := estimate.Env{Catalog: c, Params: perf.MustDefaultParams()}
	grid := []float64{0, 2000, 4000}
	res, err := FitMoEFloor(env, cases, grid, "model", nil)
	if err != nil {
		t.Fatal(err)
	}

	key, _ := cvKey("model", c)
	oracle := func(cs Case, v float64) Prediction {
		e := env
		e.Params = withMoEFloor(env.Params, func(perf.Backend) float64 { return v })
		return Predict(e, []Case{cs})[0]
	}
	loss := func(keep func(Case) bool, v float64) (float64, int) {
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
	best := func(keep func(Case) bool) float64 {
		bv, bl := 0.0, math.Inf(1)
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
			t.Errorf("%s: chose %g us, oracle %g us", b, got, want)
		}
	}
	covered := 0
	for _, f := range res.Folds {
		want := best(func(cs Case) bool { return key(cs) != f.Held && cs.Backend == string(f.Backend) })
		if f.FloorUs != want {
			t.Errorf("fold %s/%s: %g us, oracle %g us", f.Held, f.Backend, f.FloorUs, want)
		}
		covered += f.Cases
	}
	if covered != len(cases) || len(res.HeldOut.Prediction) != len(cases) {
		t.Fatalf("folds cover %d cases, held out %d, want %d", covered, len(res.HeldOut.Prediction), len(cases))
	}
	for i, p := range res.HeldOut.Prediction {
		var floor float64
		for _, f := range res.Folds {
			if f.Held == key(cases[i]) && string(f.Backend) == cases[i].Backend {
				floor = f.FloorUs
			}
		}
		if want := oracle(cases[i], floor); p.PredTTFTms != want.PredTTFTms || p.PredTPOTms != want.PredTPOTms {
			t.Errorf("case %s held out: TTFT %g, oracle at %g us %g", cases[i].ID, p.PredTTFTms, floor, want.PredTTFTms)
		}
	}
	if res.InSample.Overall.TTFTMAPE+res.InSample.Overall.TPOTMAPE > res.Without.Overall.TTFTMAPE+res.Without.Overall.TPOTMAPE+1e-9 {
		t.Errorf("in sample %v worse than no floor %v, which the grid holds", res.InSample.Overall, res.Without.Overall)
	}

	p := res.Params(env.Params)
	for b, v := range res.Chosen {
		if p.Backends[b].MoEPromptFloorUs != v {
			t.Errorf("written %s floor %g, chose %g", b, p.Backends[b].MoEPromptFloorUs, v)
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

func TestFitMoEFloorRejects(t *testing.T) {
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}
	one := []Case{{Source: "silicon", Backend: "sglang", Model: "deepseek-ai/DeepSeek-R1"}}
	for _, tc := range []struct {
		grid  []float64
		cases []Case
		by    string
		want  string
	}{
		{[]float64{500, 1000}, one, "model", "must start at 0"},
		{nil, one, "model", "must start at 0"},
		{[]float64{0}, nil, "model", "no measured MoE"},
		{[]float64{0}, one, "backend", "--cv"},
	} {
		if _, err := FitMoEFloor(env, tc.cases, tc.grid, tc.by, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("grid %v, %d cases, by %q: %v, want %q", tc.grid, len(tc.cases), tc.by, err, tc.want)
		}
	}
}
