package calibrate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

func row(id string, tp, conc int, ttft, tpot float64) GridRow {
	return GridRow{ID: id, Grid: "g", TP: tp, Concurrency: conc, OSL: 100, TTFTms: ttft, TPOTms: tpot}
}

func pred(id string, ttft, tpot float64) Prediction {
	return Prediction{Case: Case{ID: id}, PredTTFTms: ttft, PredTPOTms: tpot}
}

func TestDecideScoresPicks(t *testing.T) {
	// Measured: a (slow, low throughput), b (middle), c (fast per GPU, slow TPOT), d.
	rows := []GridRow{row("a", 1, 4, 100, 10), row("b", 1, 16, 200, 20), row("c", 1, 64, 400, 40), row("d", 2, 8, 100, 12)}
	// Limits at the TPOT quartiles: 11.5, 16, 25 ms.
	for _, tc := range []struct {
		name      string
		preds     []Prediction
		misses    int
		nothing   int
		shortfall float64 // mean over picks that meet their limit
	}{
		{"exact predictions pick the best", []Prediction{pred("a", 100, 10), pred("b", 200, 20), pred("c", 400, 40), pred("d", 100, 12)}, 0, 0, 0},
		// Optimistic TPOT for c: it is picked at every limit and misses each.
		{"optimistic pick misses", []Prediction{pred("a", 100, 10), pred("b", 200, 20), pred("c", 400, 5), pred("d", 100, 12)}, 3, 0, 0},
		// Pessimistic: nothing is predicted under the first limit.
		{"pessimistic finds nothing", []Prediction{pred("a", 100, 30), pred("b", 200, 30), pred("c", 400, 50), pred("d", 100, 30)}, 3, 3, 0},
		// b unanswered: at the 25 ms limit the pick is a (the best is b).
		{"unanswered best", []Prediction{pred("a", 100, 10), pred("c", 400, 40), pred("d", 100, 12)}, 0, 0, (1 - tokensPerGPU(4, 100, 1, 100, 10)/tokensPerGPU(16, 100, 1, 200, 20)) / 3},
	} {
		rep := Decide(rows, tc.preds)
		if rep.Grids != 1 || rep.Decisions != 3 {
			t.Fatalf("%s: %d grids, %d decisions, want 1 and 3", tc.name, rep.Grids, rep.Decisions)
		}
		if rep.Misses != tc.misses || rep.NothingFit != tc.nothing || math.Abs(rep.MeanShortfall-tc.shortfall) > 1e-9 {
			t.Errorf("%s: misses %d, nothing %d, shortfall %.4f; want %d, %d, %.4f\n%+v", tc.name, rep.Misses, rep.NothingFit, rep.MeanShortfall,
				tc.misses, tc.nothing, tc.shortfall, rep.Items)
		}
	}
}

// Against a brute-force oracle on random grids: predictions equal to the
// measurements never miss and never fall short; the best is the maximum
// over the rows that meet the limit.
func TestDecidePerfectPredictionsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 2 + rng.IntN(10)
		var rows []GridRow
		var preds []Prediction
		for i := range n {
			id := fmt.Sprint(trial, "-", i)
			r := row(id, 1<<rng.IntN(4), 1+rng.IntN(256), 50+rng.Float64()*2000, 5+rng.Float64()*100)
			rows = append(rows, r)
			preds = append(preds, pred(id, r.TTFTms, r.TPOTms))
		}
		rep := Decide(rows, preds)
		if rep.Misses != 0 || rep.MeanShortfall != 0 {
			t.Fatalf("trial %d: perfect predictions missed %d, shortfall %.3f", trial, rep.Misses, rep.MeanShortfall)
		}
		for _, d := range rep.Items {
			best := 0.0
			for _, r := range rows {
				if v := tokensPerGPU(r.Concurrency, r.OSL, r.GPUs(), r.TTFTms, r.TPOTms); r.TPOTms <= d.LimitTPOTms && v > best {
					best = v
				}
			}
			if d.BestTokensPerGPU != best || d.PickTokensPerGPU != best {
				t.Fatalf("trial %d: best %.1f pick %.1f, oracle %.1f", trial, d.BestTokensPerGPU, d.PickTokensPerGPU, best)
			}
		}
	}
}

func TestDecisionsOnSharedGrids(t *testing.T) {
	rows, err := LoadGridRows(sharedtest.Path(t, "calibration", "silicon_calibration.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var preds []Prediction
	for _, r := range rows {
		preds = append(preds, pred(r.ID, r.TTFTms, r.TPOTms))
	}
	rep := Decide(rows, preds)
	if rep.Grids < 100 || rep.Decisions < 3*rep.Grids/2 || rep.Misses != 0 || rep.Unanswered != 0 {
		t.Errorf("measured as predicted: %d grids, %d decisions, %d misses, %d unanswered", rep.Grids, rep.Decisions, rep.Misses, rep.Unanswered)
	}
	// Halving every TPOT (optimistic) must make picks miss.
	for i := range preds {
		preds[i].PredTPOTms /= 2
	}
	if bad := Decide(rows, preds); bad.MissRate < 0.3 {
		t.Errorf("halved TPOT predictions miss %.0f%% of limits; want most", 100*bad.MissRate)
	}
}
