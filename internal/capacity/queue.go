package capacity

import (
	"math"
	"sort"
	"sync"
)

// MaxUtilisation keeps a prefill pool off saturation even when the TTFT
// target would allow it.
const MaxUtilisation = 0.95

// A prefill server is modelled as an M/D/1 queue: Poisson arrivals wait for
// a server whose isolated latency is t1 ms (one prompt alone, with its
// overheads) and whose service time at saturation is s ms per prompt.

// QueueTTFT is the mean TTFT in ms at rate req/s: t1 plus the M/D/1 wait;
// +Inf at or past saturation.
func QueueTTFT(t1, s, rate float64) float64 {
	rho := rate * s / 1e3
	if rho >= 1 {
		return math.Inf(1)
	}
	return t1 + rho/(2*(1-rho))*s
}

// QueueRate is the most req/s whose mean TTFT stays within budget ms (at
// most MaxUtilisation of saturation); 0 if one prompt alone misses it.
func QueueRate(t1, s, budget float64) float64 {
	if s <= 0 || t1 > budget {
		return 0
	}
	k := (budget - t1) / s
	return math.Min(2*k/(1+2*k), MaxUtilisation) / s * 1e3
}

// QueueTTFTAt is the TTFT in ms at percentile pct (0: the mean): t1
// plus the M/D/1 waiting time's quantile. Near the body it inverts the
// exact waiting-time distribution (Erlang's alternating sum); far in the
// tail, where that sum loses its precision, it uses the Cramer-Lundberg
// tail P(W > t) = C exp(-theta t), which is exact there.
func QueueTTFTAt(t1, s, rate, pct float64) float64 {
	if pct <= 0 {
		return QueueTTFT(t1, s, rate)
	}
	rho := rate * s / 1e3
	if rho >= 1 {
		return math.Inf(1)
	}
	q := pct / 100
	if rho <= 0 || s <= 0 || 1-rho >= q {
		return t1 // at least pct of the prompts find the server idle
	}
	lambda := rate / 1e3 // per ms
	tail := tailWait(lambda, s, rho, 1-q)
	// The sum's terms reach about exp(2 lambda t): past lambda t = 12 it
	// keeps fewer than six digits, and the tail form is as good there.
	const exactUpTo = 12
	if lambda*tail > exactUpTo-2 {
		return t1 + tail
	}
	lo, hi := 0.0, math.Min(2*tail+s, exactUpTo/lambda)
	if md1WaitCDF(lambda, s, rho, hi) < q {
		return t1 + tail
	}
	for range 60 {
		mid := (lo + hi) / 2
		if md1WaitCDF(lambda, s, rho, mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return t1 + hi
}

// md1WaitCDF is P(W <= t) of the M/D/1 queue (lambda per ms, service s ms):
// (1 - rho) * sum_{k=0}^{floor(t/s)} (-x_k)^k / k! * e^{x_k}, x_k = lambda (t - k s).
func md1WaitCDF(lambda, s, rho, t float64) float64 {
	if t < 0 {
		return 0
	}
	sum := 0.0
	for k := 0; float64(k)*s <= t; k++ {
		x := lambda * (t - float64(k)*s)
		lg, _ := math.Lgamma(float64(k + 1))
		var term float64
		if k == 0 {
			term = math.Exp(x)
		} else if x > 0 {
			term = math.Exp(float64(k)*math.Log(x) - lg + x)
		}
		if k%2 == 1 {
			term = -term
		}
		sum += term
	}
	return math.Min(1, math.Max(0, (1-rho)*sum))
}

// tailWait is the wait exceeded with probability p in the Cramer-Lundberg
// form: theta solves lambda (exp(theta s) - 1) = theta and
// C = (1 - rho) / (lambda s exp(theta s) - 1).
func tailWait(lambda, s, rho, p float64) float64 {
	f := func(th float64) float64 { return lambda*math.Expm1(th*s) - th }
	lo, hi := 0.0, 1/s
	for f(hi) < 0 {
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	c := math.Min((1-rho)/(lambda*s*math.Exp(hi*s)-1), rho)
	if c <= p {
		return 0
	}
	return math.Log(c/p) / hi
}

// QueueRateAt is the most req/s whose TTFT at percentile pct stays within
// budget ms (at most MaxUtilisation of saturation); 0 if one prompt alone
// misses it. The M/D/1 wait in service times depends on the utilisation
// alone, so each percentile's wait is tabulated once over utilisation and
// inverted by search, rounding the utilisation down (never over budget).
func QueueRateAt(t1, s, budget, pct float64) float64 {
	if pct <= 0 {
		return QueueRate(t1, s, budget)
	}
	if s <= 0 || t1 > budget {
		return 0
	}
	waits := waitTable(pct)
	k := (budget - t1) / s // the wait allowed, in service times
	i := sort.Search(len(waits), func(i int) bool { return waits[i] > k }) - 1
	if i < 0 {
		return 0
	}
	return float64(i) * rhoStep / s * 1e3
}

// rhoStep is the utilisation grid of the wait tables.
const rhoStep = 0.001

var waitTables sync.Map // percentile -> []float64

// waitTable is the wait at percentile pct in service times for the
// utilisations 0, rhoStep, ... up to MaxUtilisation.
func waitTable(pct float64) []float64 {
	if t, ok := waitTables.Load(pct); ok {
		return t.([]float64)
	}
	n := int(math.Round(MaxUtilisation/rhoStep)) + 1
	t := make([]float64, n)
	for i := range t {
		t[i] = QueueTTFTAt(0, 1, float64(i)*rhoStep*1e3, pct)
	}
	for i := 1; i < n; i++ {
		t[i] = math.Max(t[i], t[i-1]) // monotone for the search, whatever the rounding
	}
	waitTables.Store(pct, t)
	return t
}
