package capacity

import "math"

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
