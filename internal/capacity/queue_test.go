package capacity

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// simulateMD1 is the brute-force oracle: Poisson arrivals at rate req/s
// into one server of fixed service s ms (Lindley's recursion); it returns
// the sorted waits in ms.
func simulateMD1(rate, s float64, n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	waits := make([]float64, n)
	w := 0.0
	for i := range n {
		gap := r.ExpFloat64() / rate * 1e3
		w = math.Max(0, w+s-gap)
		waits[i] = w
	}
	sort.Float64s(waits)
	return waits
}

// The percentile model must track the simulated M/D/1 queue across
// utilisations and percentiles.
func TestQueueTTFTAtAgainstSimulation(t *testing.T) {
	const s, t1 = 100.0, 150.0
	for _, rho := range []float64{0.2, 0.3, 0.5, 0.7, 0.85, 0.93} {
		rate := rho / s * 1e3
		waits := simulateMD1(rate, s, 400_000, uint64(rho*100))
		for _, pct := range []float64{50, 75, 90, 95, 99} {
			sim := t1 + waits[int(pct/100*float64(len(waits)))]
			got := QueueTTFTAt(t1, s, rate, pct)
			// Judge the error on the wait, with a floor of a tenth of a service time.
			if err := math.Abs(got - sim); err > math.Max(0.2*(sim-t1), 0.1*s) {
				t.Errorf("rho %.2f p%g: model %.1f ms, simulated %.1f ms", rho, pct, got, sim)
			}
		}
		mean := 0.0
		for _, w := range waits {
			mean += w
		}
		mean = t1 + mean/float64(len(waits))
		if got := QueueTTFT(t1, s, rate); math.Abs(got-mean)/mean > 0.03 {
			t.Errorf("rho %.2f mean: model %.1f ms, simulated %.1f ms", rho, got, mean)
		}
	}
}

func TestQueueRateAtInvertsQueueTTFTAt(t *testing.T) {
	const t1, s = 150.0, 100.0
	prev := math.Inf(1)
	for _, pct := range []float64{50, 90, 99, 99.9} {
		for _, budget := range []float64{160, 300, 600, 2000} {
			rate := QueueRateAt(t1, s, budget, pct)
			if rate <= 0 || rate > MaxUtilisation/s*1e3+1e-9 {
				t.Fatalf("p%g budget %g: rate %g outside (0, saturation]", pct, budget, rate)
			}
			if got := QueueTTFTAt(t1, s, rate, pct); got > budget+1e-6 {
				t.Errorf("p%g budget %g: TTFT %.1f at the returned rate %.2f", pct, budget, got, rate)
			}
		}
		r := QueueRateAt(t1, s, 600, pct)
		if r > prev+1e-9 {
			t.Errorf("a higher percentile (p%g) allows more load (%.2f > %.2f req/s)", pct, r, prev)
		}
		prev = r
	}
	if QueueRateAt(t1, s, 100, 90) != 0 {
		t.Error("a budget below one prompt's latency must allow no load")
	}
	if mean, p90 := QueueRateAt(t1, s, 400, 0), QueueRateAt(t1, s, 400, 90); p90 >= mean {
		t.Errorf("p90 allows %.2f req/s, the mean %.2f: the tail must be the tighter bound", p90, mean)
	}
}
