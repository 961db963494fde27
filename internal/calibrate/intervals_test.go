package calibrate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// heldOut makes n silicon predictions whose measured/predicted ratios are
// log-normal around bias, spread over campaigns.
func heldOut(rng *rand.Rand, backend string, n int, bias, sigma float64) []Prediction {
	var out []Prediction
	for i := range n {
		r := bias * math.Exp(sigma*rng.NormFloat64())
		out = append(out, Prediction{Case: Case{ID: fmt.Sprint(backend, i), Source: "silicon", Backend: backend, Mode: "agg", Dense: true,
			Campaign: fmt.Sprint("c", i%6), TTFTms: 100 * r, TPOTms: 10 * r}, PredTTFTms: 100, PredTPOTms: 10})
	}
	return out
}

func TestIntervalsFromHeldOutRatios(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	preds := append(heldOut(rng, "vllm", 2000, 1.3, 0.2), heldOut(rng, "sglang", MinIntervalRuns-1, 1, 0.1)...)
	preds = append(preds, Prediction{Case: Case{Source: "silicon", Backend: "vllm", Mode: "agg", Dense: true, TTFTms: 1, TPOTms: 1}, Err: "unknown model"})
	iv := Intervals(preds, "test")
	k := iv.For(perf.IntervalKey(perf.VLLM, false, "agg"))
	if k == nil || k.N != 2000 {
		t.Fatalf("vllm dense agg: %+v, want 2000 runs (the failed prediction left out)", k)
	}
	// Log-normal: P10 = bias x e^(-1.2816 sigma), P90 = bias x e^(1.2816 sigma).
	for name, r := range map[string]perf.Ratio{"ttft": k.TTFT, "tpot": k.TPOT} {
		if math.Abs(r.P10-1.3*math.Exp(-1.2816*0.2)) > 0.03 || math.Abs(r.P90-1.3*math.Exp(1.2816*0.2)) > 0.04 || math.Abs(r.P50-1.3) > 0.03 {
			t.Errorf("%s ratios %+v, want about %.3f, 1.3, %.3f", name, r, 1.3*math.Exp(-0.256), 1.3*math.Exp(0.256))
		}
	}
	if iv.For(perf.IntervalKey(perf.SGLang, false, "agg")) != nil {
		t.Errorf("sglang has %d runs, fewer than %d: want no interval", MinIntervalRuns-1, MinIntervalRuns)
	}
	cov, err := CrossCoverage(preds, "campaign", estimate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if cov.N != 2000 || math.Abs(cov.TTFTInside-0.8) > 0.04 || math.Abs(cov.TPOTInside-0.8) > 0.04 {
		t.Errorf("cross-fitted coverage %+v, want about 80%% of 2000 runs", cov)
	}
	// Intervals taken from other data than the runs they score miss them.
	shifted := heldOut(rng, "vllm", 500, 2.5, 0.2)
	if c := IntervalCoverage(iv, shifted); c.TPOTInside > 0.1 {
		t.Errorf("intervals around 1.3 cover %.0f%% of runs around 2.5", 100*c.TPOTInside)
	}
}

// Groups that differ from each other (each campaign off by its own
// factor) make the pooled quantiles cover fewer of an unseen group's runs
// than they say: the calibrated interval is widened until the held-out
// halves land inside 80% of the time. Groups alike keep the nominal
// tails, and so do kinds of fewer than minCalibrationGroups groups.
func TestCalibratedIntervalsCoverUnseenGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	alike := heldOut(rng, "vllm", 3000, 1.2, 0.3)
	// Each campaign off by its own factor: the even ones (one half of the
	// split) agree, the odd ones scatter.
	var apart []Prediction
	for g, bias := range []float64{1, 0.5, 1, 0.8, 1, 1.25, 1, 2} {
		for _, p := range heldOut(rng, "vllm", 300, bias, 0.15) {
			p.Campaign, p.ID = fmt.Sprint("g", g), fmt.Sprint(p.ID, "g", g)
			apart = append(apart, p)
		}
	}
	// Three groups as far apart as the widened case's, too few to move.
	var few []Prediction
	for i, p := range heldOut(rng, "sglang", 300, 1, 0.15) {
		bias := []float64{0.5, 1, 2}[i%3]
		p.Campaign, p.TTFTms, p.TPOTms = fmt.Sprint("f", i%3), p.TTFTms*bias, p.TPOTms*bias
		few = append(few, p)
	}
	tailOf := func(r perf.Ratio) float64 {
		if r.Tail == 0 {
			return perf.NominalTail
		}
		return r.Tail
	}
	for _, tc := range []struct {
		name   string
		preds  []Prediction
		kind   string
		widens bool
		few    bool // fewer groups than the split needs: coverage may fall short
	}{
		{"groups alike", alike, perf.IntervalKey(perf.VLLM, false, "agg"), false, false},
		{"groups apart", apart, perf.IntervalKey(perf.VLLM, false, "agg"), true, false},
		{"too few groups", few, perf.IntervalKey(perf.SGLang, false, "agg"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nominal, err := CrossCoverage(tc.preds, "campaign", estimate.Env{})
			if err != nil {
				t.Fatal(err)
			}
			iv, cov, err := CalibratedIntervals(tc.preds, "campaign", estimate.Env{}, "test")
			if err != nil {
				t.Fatal(err)
			}
			k := iv.For(tc.kind)
			if k == nil {
				t.Fatal("no interval")
			}
			if iv.KernelKinds[tc.kind] != nil {
				t.Error("spreads measured on the roofline are filed as measured with --kernels")
			}
			tables := &perf.Params{Kernels: func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return nil, nil, nil }}
			withTables, _, err := CalibratedIntervals(tc.preds, "campaign", estimate.Env{Params: tables}, "test")
			if err != nil {
				t.Fatal(err)
			}
			if kt := withTables.KernelKinds[tc.kind]; kt == nil || withTables.For(tc.kind) != nil || *kt != *k {
				t.Errorf("spreads measured with --kernels are not filed as such: %+v", withTables)
			}
			last := IntervalTails[len(IntervalTails)-1]
			for name, c := range map[string][3]float64{"ttft": {nominal.TTFTInside, cov.TTFTInside, tailOf(k.TTFT)}, "tpot": {nominal.TPOTInside, cov.TPOTInside, tailOf(k.TPOT)}} {
				before, after, tail := c[0], c[1], c[2]
				if tc.widens != (tail < perf.NominalTail) {
					t.Errorf("%s: tail %g (nominal coverage %.0f%%), want widened %v", name, tail, 100*before, tc.widens)
				}
				if !tc.few && after < NominalCoverage-coverageSlack && tail != last {
					t.Errorf("%s: %.0f%% inside at tail %g, short of 80%% and not the widest tail", name, 100*after, tail)
				}
				if tc.widens && before >= NominalCoverage {
					t.Errorf("%s: nominal intervals already cover %.0f%%: the case does not test widening", name, 100*before)
				}
			}
		})
	}
}
