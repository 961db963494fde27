package planner

import "math"

// series wraps a predictor with what it has recently seen: its forecasts
// are kept inside the observed range (a trend extrapolated past it, or
// below zero, is noise, not load), and its one-step errors give the band
// that scale-downs must clear.
type series struct {
	p      Predictor
	window int
	// headroom is how far above the recent maximum a forecast may go
	// (1: not at all; the rate may climb, sizes may not).
	headroom float64
	vals     []float64
	errs     []float64
}

func newSeries(p Predictor, window int, headroom float64) *series {
	return &series{p: p, window: window, headroom: headroom}
}

func (s *series) observe(v float64) {
	if len(s.vals) > 0 {
		s.errs = appendWindow(s.errs, v-s.predict(1), s.window)
	}
	s.p.Observe(v)
	s.vals = appendWindow(s.vals, v, s.window)
}

func appendWindow(xs []float64, v float64, n int) []float64 {
	xs = append(xs, v)
	if len(xs) > n {
		xs = xs[len(xs)-n:]
	}
	return xs
}

func (s *series) seen() bool { return len(s.vals) > 0 }

// predict is the forecast steps ahead, clamped to the recent range.
func (s *series) predict(steps float64) float64 {
	v := s.p.Predict(steps)
	if len(s.vals) == 0 {
		return math.Max(v, 0)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range s.vals {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if math.IsNaN(v) {
		v = s.vals[len(s.vals)-1]
	}
	return math.Min(math.Max(v, lo), hi*s.headroom)
}

// upper is the forecast plus z times the RMS of recent one-step errors.
func (s *series) upper(steps, z float64) float64 {
	if len(s.errs) == 0 {
		return s.predict(steps)
	}
	ss := 0.0
	for _, e := range s.errs {
		ss += e * e
	}
	return s.predict(steps) + z*math.Sqrt(ss/float64(len(s.errs)))
}
