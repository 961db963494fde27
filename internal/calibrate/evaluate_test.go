package calibrate

import (
	"math"
	"strings"
	"testing"
)

// TestSummariseSaysWhichSideErrorsFall checks the optimistic shares: runs
// predicted faster than measured (lower TTFT or TPOT, higher throughput),
// a tie as half, failed runs and unmeasured metrics left out.
func TestSummariseSaysWhichSideErrorsFall(t *testing.T) {
	agg := func(ttft, tpot, pttft, ptpot float64) Prediction {
		return Prediction{Case: Case{Source: "silicon", Mode: "agg", Dense: true, TTFTms: ttft, TPOTms: tpot}, PredTTFTms: pttft, PredTPOTms: ptpot}
	}
	tput := func(meas, pred float64) Prediction {
		return Prediction{Case: Case{Source: "max-throughput", OutputTPS: meas}, PredTPS: pred}
	}
	failed := Prediction{Case: Case{Source: "silicon", Mode: "agg", Dense: true, TTFTms: 100, TPOTms: 10}, Err: "does not fit"}
	for _, tc := range []struct {
		name            string
		preds           []Prediction
		ttft, tpot, tps float64 // -1: nil, no run measured it
	}{
		{"all optimistic", []Prediction{agg(100, 10, 50, 5), agg(200, 20, 150, 19)}, 100, 100, -1},
		{"all pessimistic", []Prediction{agg(100, 10, 150, 11), agg(200, 20, 250, 30)}, 0, 0, -1},
		{"both sides, a tie counts half", []Prediction{agg(100, 10, 50, 10), agg(100, 10, 150, 12)}, 50, 25, -1},
		{"failed runs left out", []Prediction{agg(100, 10, 50, 5), failed}, 100, 100, -1},
		{"throughput optimistic when predicted higher", []Prediction{tput(1000, 1200), tput(1000, 900), tput(1000, 1100)}, -1, -1, 100 * 2.0 / 3},
		{"no runs", nil, -1, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Summarise(tc.preds, 0)
			s := r.DenseAgg
			if tc.tps >= 0 {
				s = r.MaxTput
			}
			for _, m := range []struct {
				name string
				got  *float64
				want float64
			}{{"ttft", s.TTFTOptimistic, tc.ttft}, {"tpot", s.TPOTOptimistic, tc.tpot}, {"throughput", s.TPSOptimistic, tc.tps}} {
				switch {
				case m.want < 0 && m.got != nil:
					t.Errorf("%s optimistic share = %g, want none (no run measured it)", m.name, *m.got)
				case m.want >= 0 && m.got == nil:
					t.Errorf("%s optimistic share missing, want %g", m.name, m.want)
				case m.want >= 0 && math.Abs(*m.got-m.want) > 1e-9:
					t.Errorf("%s optimistic share = %g, want %g", m.name, *m.got, m.want)
				}
			}
		})
	}
}

// TestLossesLeanAsDocumented scales predictions spread evenly in log
// around the measured values and finds, by brute force over the scale,
// where each objective is least: MAPE's least lies well below the measured
// values (it leans toward predicting too fast), the log loss's at them.
func TestLossesLeanAsDocumented(t *testing.T) {
	var preds []Prediction
	for _, r := range []float64{-0.5, 0, 0.5} {
		for _, meas := range []float64{10, 100, 1000} {
			preds = append(preds, Prediction{Case: Case{TPOTms: meas}, PredTPOTms: meas * math.Exp(r)})
		}
	}
	argmin := func(loss string) float64 {
		f, err := lossFunc(loss)
		if err != nil {
			t.Fatal(err)
		}
		best, at := math.Inf(1), 0.0
		for s := 0.3; s <= 3; s += 0.001 {
			scaled := make([]Prediction, len(preds))
			for i, p := range preds {
				scaled[i] = p
				scaled[i].PredTPOTms *= s
			}
			if l := weightedLoss(scaled, 1, f); l < best-1e-12 {
				best, at = l, s
			}
		}
		return at
	}
	if s := argmin(LossMAPE); s > 0.8 {
		t.Errorf("MAPE is least at %.3f times the predictions, want well below 1 (it leans low)", s)
	}
	if s := argmin(LossLog); math.Abs(s-1) > 0.01 {
		t.Errorf("the log loss is least at %.3f times the predictions, want 1", s)
	}
	if _, err := lossFunc("rmse"); err == nil || !strings.Contains(err.Error(), `"rmse"`) || !strings.Contains(err.Error(), "mape, log") {
		t.Errorf("unknown loss: %v", err)
	}
	if logErr(0, 1) != 3 || logErr(2, 1) != logErr(0.5, 1) {
		t.Errorf("logErr: 0 -> %g (want 3, a failed case), 2x %g vs 0.5x %g (want equal)", logErr(0, 1), logErr(2, 1), logErr(0.5, 1))
	}
}
