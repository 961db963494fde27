package planner

import "testing"

// Forecasts stay inside what was recently seen: a falling trend never
// predicts zero traffic or sizes below any request sent.
func TestForecastsStayInTheObservedRange(t *testing.T) {
	for _, kind := range []string{PredictHolt, PredictKalman, PredictARIMA, PredictMovingAvg, PredictConstant} {
		pr, err := NewPredictor(kind, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := newSeries(pr, 12, 1)
		for _, v := range []float64{4000, 3000, 2000, 1000, 500, 300, 200} {
			s.observe(v)
		}
		for _, h := range []float64{1, 4, 10} {
			if got := s.predict(h); got < 200 || got > 4000 {
				t.Errorf("%s: %g steps ahead predicts %.0f outside the observed 200-4000", kind, h, got)
			}
		}
		if u := s.upper(1, 1.28); u < s.predict(1) {
			t.Errorf("%s: upper band %.0f below the forecast %.0f", kind, u, s.predict(1))
		}
	}
}
