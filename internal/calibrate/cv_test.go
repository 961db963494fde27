package calibrate

import (
	"strings"
	"testing"
)

func TestCampaign(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"source_file=2026-04-06.csv; model=Llama-3.1-70B; silicon_concurrency=32", "2026-04-06.csv"},
		{"source_file=/home/a/aic-auto-gap-analysis/data/h100_sxm/trtllm/1.0.0rc3/x.csv", "aic-auto-gap-analysis"},
		{"db-dump/2026-04-27", "db-dump/2026-04-27"},
		{"", "unknown"},
	} {
		if got := campaign(tc.in); got != tc.want {
			t.Errorf("campaign(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Each group is held out once, predicted by a fit that never saw it: the
// folds cover every case exactly once, and each fold trained on the rest.
func TestCrossValidateHoldsOutEachGroup(t *testing.T) {
	ds, env := loadShared(t)
	c := env.Catalog
	// A few rows of a small model per GPU keep the folds fast. The files
	// spell GPUs two ways; a fold holds out the catalog GPU.
	var cases []Case
	per := map[string]int{}
	for _, cs := range ds.FitSet() {
		g, err := c.GPU(cs.System)
		if err != nil || !strings.Contains(cs.Model, "Llama-3.1-8B") || per[g.Name] >= 8 {
			continue
		}
		per[g.Name]++
		cases = append(cases, cs)
	}
	if len(per) < 2 {
		t.Skipf("need two systems, have %v", per)
	}
	var seen []string
	res, err := CrossValidate(env, env.Params, cases, "system", FitOptions{MaxEvaluations: 300}, func(i, n int, held string) {
		seen = append(seen, held)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Folds) != len(per) || len(seen) != len(per) {
		t.Fatalf("%d folds (%v), want one per system %v", len(res.Folds), seen, per)
	}
	total := 0
	for _, f := range res.Folds {
		if f.Train+f.Test.N != len(cases) || f.Test.N != per[f.Held] {
			t.Errorf("fold %s: trained on %d, tested on %d of %d cases", f.Held, f.Train, f.Test.N, len(cases))
		}
		if f.Evaluations < 2 || f.TrainLoss <= 0 {
			t.Errorf("fold %s: %d evaluations, loss %v", f.Held, f.Evaluations, f.TrainLoss)
		}
		total += f.Test.N
	}
	if total != len(cases) || res.HeldOut.Overall.N+res.HeldOut.MaxTput.N != len(cases) {
		t.Errorf("held-out predictions %d (+%d max-throughput), want %d", res.HeldOut.Overall.N, res.HeldOut.MaxTput.N, len(cases))
	}
	if _, err := CrossValidate(env, env.Params, cases, "backend", FitOptions{}, nil); err == nil || !strings.Contains(err.Error(), "--cv") {
		t.Errorf("unknown unit: %v", err)
	}
}
