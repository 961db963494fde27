package sim

import (
	"math"
	"sort"
)

// hist is a log-bucketed histogram of positive values (1% wide buckets):
// percentiles in bounded memory, whatever the number of requests.
type hist struct {
	counts map[int]int
	n      int
}

const histBase = 1.01

func newHist() *hist { return &hist{counts: map[int]int{}} }

func (h *hist) add(v float64) {
	if v <= 0 {
		v = 1e-9
	}
	h.counts[int(math.Floor(math.Log(v)/math.Log(histBase)))]++
	h.n++
}

// quantile returns the bucket midpoint holding quantile q (0 when empty).
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	keys := make([]int, 0, len(h.counts))
	for k := range h.counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	target := int(math.Ceil(q * float64(h.n)))
	if target < 1 {
		target = 1
	}
	seen := 0
	for _, k := range keys {
		seen += h.counts[k]
		if seen >= target {
			return math.Pow(histBase, float64(k)+0.5)
		}
	}
	return math.Pow(histBase, float64(keys[len(keys)-1])+0.5)
}
