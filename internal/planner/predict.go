package planner

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Predictor forecasts one load series (request rate, mean ISL, mean OSL)
// from the values observed once per tick.
type Predictor interface {
	// Observe adds the value of the interval that just ended.
	Observe(v float64)
	// Predict forecasts the value steps intervals ahead (steps >= 1).
	Predict(steps float64) float64
}

// Predictor kinds.
const (
	PredictConstant  = "constant"
	PredictMovingAvg = "moving-average"
	PredictHolt      = "holt"
	PredictKalman    = "kalman"
	PredictARIMA     = "arima"
)

// NewPredictor builds a predictor by kind; window is the history length
// of moving-average and ARIMA (default 6 and 24).
func NewPredictor(kind string, window int) (Predictor, error) {
	switch kind {
	case PredictConstant, "":
		return &constant{}, nil
	case PredictMovingAvg:
		return &movingAverage{window: defaultInt(window, 6)}, nil
	case PredictHolt:
		return &holt{alpha: 0.5, beta: 0.3, phi: 0.9}, nil
	case PredictKalman:
		return newKalman(), nil
	case PredictARIMA:
		return &arima{window: max(defaultInt(window, 24), 8), p: 2}, nil
	}
	return nil, fmt.Errorf("predictor: %q is not constant, moving-average, holt, kalman or arima", kind)
}

func defaultInt(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

// constant forecasts the last value.
type constant struct{ last float64 }

func (c *constant) Observe(v float64)       { c.last = v }
func (c *constant) Predict(float64) float64 { return math.Max(0, c.last) }

// movingAverage forecasts the mean of the last window values.
type movingAverage struct {
	window int
	vals   []float64
}

func (m *movingAverage) Observe(v float64) {
	m.vals = append(m.vals, v)
	if len(m.vals) > m.window {
		m.vals = m.vals[1:]
	}
}

func (m *movingAverage) Predict(float64) float64 {
	if len(m.vals) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range m.vals {
		s += v
	}
	return math.Max(0, s/float64(len(m.vals)))
}

// holt is double exponential smoothing with a damped trend: a level and a
// trend whose extrapolation fades by phi a step, so a step in the load is
// not projected upward for the whole lead time.
type holt struct {
	alpha, beta, phi float64
	level, trend     float64
	n                int
}

func (h *holt) Observe(v float64) {
	switch h.n {
	case 0:
		h.level = v
	case 1:
		h.trend = v - h.level
		h.level = v
	default:
		prev := h.level
		h.level = h.alpha*v + (1-h.alpha)*(h.level+h.phi*h.trend)
		h.trend = h.beta*(h.level-prev) + (1-h.beta)*h.phi*h.trend
	}
	h.n++
}

func (h *holt) Predict(steps float64) float64 {
	// Sum of phi^k for k = 1..steps.
	damp := h.phi * (1 - math.Pow(h.phi, steps)) / (1 - h.phi)
	return math.Max(0, h.level+damp*h.trend)
}

// kalman is a local-linear-trend Kalman filter: state (level, trend), the
// level drifts by the trend each step, both with process noise.
type kalman struct {
	x    [2]float64    // level, trend
	p    [2][2]float64 // covariance
	q, r float64       // process and measurement noise (relative)
	n    int
}

func newKalman() *kalman { return &kalman{q: 0.05, r: 0.2} }

func (k *kalman) Observe(v float64) {
	if k.n == 0 {
		k.x = [2]float64{v, 0}
		s := math.Max(v*v, 1)
		k.p = [2][2]float64{{s, 0}, {0, s}}
		k.n++
		return
	}
	k.n++
	// Predict: x = F x with F = [[1,1],[0,1]]; P = F P F' + Q.
	x0, x1 := k.x[0]+k.x[1], k.x[1]
	p := k.p
	p00 := p[0][0] + p[0][1] + p[1][0] + p[1][1]
	p01 := p[0][1] + p[1][1]
	p10 := p[1][0] + p[1][1]
	p11 := p[1][1]
	scale := math.Max(math.Abs(x0), 1)
	q := k.q * scale * scale
	p00 += q
	p11 += q
	// Update with the measured level: H = [1, 0].
	r := k.r * scale * scale
	s := p00 + r
	g0, g1 := p00/s, p10/s
	y := v - x0
	k.x = [2]float64{x0 + g0*y, x1 + g1*y}
	k.p = [2][2]float64{{(1 - g0) * p00, (1 - g0) * p01}, {p10 - g1*p00, p11 - g1*p01}}
}

func (k *kalman) Predict(steps float64) float64 { return math.Max(0, k.x[0]+steps*k.x[1]) }

// arima is an ARIMA(p,1,0) model: an autoregression of order p on the
// first differences, refitted by least squares over the window each
// observation; too little history falls back to the last value.
type arima struct {
	window, p int
	vals      []float64
	coef      []float64 // intercept, then p lags
}

func (a *arima) Observe(v float64) {
	a.vals = append(a.vals, v)
	if len(a.vals) > a.window {
		a.vals = a.vals[1:]
	}
	a.coef = a.fit()
}

func (a *arima) fit() []float64 {
	d := make([]float64, 0, len(a.vals))
	for i := 1; i < len(a.vals); i++ {
		d = append(d, a.vals[i]-a.vals[i-1])
	}
	rows := len(d) - a.p
	if rows < 2*(a.p+1) {
		return nil
	}
	// A series whose differences do not vary (a straight ramp) has no
	// autoregression to fit: it is a random walk with drift.
	drift := func() []float64 {
		mean := 0.0
		for _, v := range d {
			mean += v
		}
		out := make([]float64, a.p+1)
		out[0] = mean / float64(len(d))
		return out
	}
	x := mat.NewDense(rows, a.p+1, nil)
	y := mat.NewVecDense(rows, nil)
	for i := 0; i < rows; i++ {
		x.Set(i, 0, 1)
		for j := 0; j < a.p; j++ {
			x.Set(i, j+1, d[i+a.p-1-j])
		}
		y.SetVec(i, d[i+a.p])
	}
	var beta mat.VecDense
	if err := beta.SolveVec(x, y); err != nil {
		return drift()
	}
	out := make([]float64, a.p+1)
	for i := range out {
		out[i] = beta.AtVec(i)
	}
	// A non-stationary fit (explosive lags) forecasts nonsense: drop it.
	sum := 0.0
	for _, c := range out[1:] {
		sum += math.Abs(c)
	}
	if sum >= 1 || math.IsNaN(sum) {
		return drift()
	}
	return out
}

func (a *arima) Predict(steps float64) float64 {
	n := len(a.vals)
	if n == 0 {
		return 0
	}
	last := a.vals[n-1]
	if a.coef == nil {
		return last
	}
	lags := make([]float64, a.p)
	for j := 0; j < a.p && n-1-j >= 1; j++ {
		lags[j] = a.vals[n-1-j] - a.vals[n-2-j]
	}
	level := last
	for s := 0; s < int(math.Ceil(steps)); s++ {
		next := a.coef[0]
		for j := 0; j < a.p; j++ {
			next += a.coef[j+1] * lags[j]
		}
		copy(lags[1:], lags[:a.p-1])
		lags[0] = next
		level += next
	}
	return math.Max(0, level)
}
