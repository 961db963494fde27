package planner

import (
	"math"
	"testing"
)

// Each predictor follows a linear ramp; trend models forecast ahead of it.
func TestPredictorsOnARamp(t *testing.T) {
	for _, tc := range []struct {
		kind     string
		min, max float64 // bounds on the 4-step forecast after 30 points of v=i
	}{
		{PredictConstant, 29, 29},
		{PredictMovingAvg, 26, 27},
		{PredictHolt, 30, 34},
		{PredictKalman, 31, 35},
		{PredictARIMA, 32.5, 33.5},
	} {
		p, err := NewPredictor(tc.kind, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			p.Observe(float64(i))
		}
		if got := p.Predict(4); got < tc.min-1e-9 || got > tc.max+1e-9 {
			t.Errorf("%s: forecast %.2f, want in [%g, %g]", tc.kind, got, tc.min, tc.max)
		}
	}
}

// On a constant series every predictor forecasts the constant; none goes negative on a fall.
func TestPredictorsSteadyAndFalling(t *testing.T) {
	for _, kind := range []string{PredictConstant, PredictMovingAvg, PredictHolt, PredictKalman, PredictARIMA} {
		p, _ := NewPredictor(kind, 0)
		for i := 0; i < 40; i++ {
			p.Observe(5)
		}
		if got := p.Predict(3); math.Abs(got-5) > 0.05 {
			t.Errorf("%s: constant 5 forecast as %.3f", kind, got)
		}
		for i := 0; i < 10; i++ {
			p.Observe(float64(4 - i))
		}
		if got := p.Predict(10); got < 0 {
			t.Errorf("%s: negative forecast %.2f", kind, got)
		}
	}
}
