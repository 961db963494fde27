package calibrate

import (
	"strings"
	"testing"
)

// TensorRT-LLM's disaggregated DeepSeek-R1 runs at 256 users or fewer
// decode faster than a lone undrafted sequence can: priced as drafting
// three tokens, their TPOT comes out far closer held out by GPU. The dense
// vLLM runs of Llama-3.1-70B, which drafted nothing, pick no drafting.
func TestFitSpecAccept(t *testing.T) {
	ds, env := loadShared(t)
	pick := func(f SpecFilter) *SpecResult {
		t.Helper()
		cases, err := f.Apply(env, ds.Cases)
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) < 20 {
			t.Skipf("the shared data has %d runs for %+v", len(cases), f)
		}
		res, err := FitSpecAccept(env, cases, 3, DefaultSpecGrid, []string{"system"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	drafted := pick(SpecFilter{Backend: "trtllm", Model: "deepseek-ai/DeepSeek-R1", Mode: "disagg", MaxConcurrency: 256})
	without, held := drafted.Without.Overall.TPOTMAPE, drafted.HeldOut[0].Report.Overall.TPOTMAPE
	if !(held < without/2) || drafted.Picked < 2 {
		t.Errorf("drafted-looking runs: TPOT MAPE %.1f%% without drafting, %.1f%% held out by GPU at the folds' picks (picked %g)", without, held, drafted.Picked)
	}
	plain := pick(SpecFilter{Backend: "vllm", Model: "meta-llama/Llama-3.1-70B-Instruct", Mode: "agg"})
	if plain.Picked != 0 {
		t.Errorf("dense vLLM runs picked acceptance %g, want no drafting", plain.Picked)
	}
}

func TestFitSpecAcceptErrors(t *testing.T) {
	ds, env := loadShared(t)
	for _, tc := range []struct {
		k    int
		grid []float64
		by   []string
		want string
	}{
		{0, DefaultSpecGrid, []string{"system"}, "spec-tokens: 0 must be 1"},
		{3, []float64{2, 3}, []string{"system"}, "must start at 0"},
		{1, []float64{0, 2.5}, []string{"system"}, "spec_accept: 2.5 must be 1 to spec_tokens+1 (2)"},
		{3, DefaultSpecGrid, nil, "name at least one grouping"},
		{3, DefaultSpecGrid, []string{"gpu"}, "gpu"},
	} {
		if _, err := FitSpecAccept(env, ds.Cases[:5], tc.k, tc.grid, tc.by, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("k %d grid %v by %v: %v, want %q", tc.k, tc.grid, tc.by, err, tc.want)
		}
	}
	for _, f := range []SpecFilter{{Backend: "tgi"}, {Model: "no/such-model"}, {Mode: "split"}, {MaxConcurrency: -1}} {
		if _, err := f.Apply(env, ds.Cases); err == nil {
			t.Errorf("filter %+v accepted", f)
		}
	}
}
