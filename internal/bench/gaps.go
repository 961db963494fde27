package bench

import (
	"math"
	"math/rand/v2"
	"sort"
)

// maxGapSample bounds the inter-token gaps a run keeps for its percentiles
// (32 MiB of them): a long run streams far more.
const maxGapSample = 1 << 22

// gapSample holds a run's inter-token gaps in bounded memory. Every gap
// counts toward the mean and the maximum; the percentiles come from a
// uniform sample of at most size gaps (reservoir sampling), exact while
// the run has streamed fewer.
type gapSample struct {
	kept     []float64
	seen     int64
	sum, max float64
	size     int
	rng      *rand.Rand
}

func newGapSample(size int, seed uint64) *gapSample {
	return &gapSample{size: size, rng: rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc908))}
}

// add takes one request's gaps.
func (g *gapSample) add(xs []float64) {
	for _, x := range xs {
		g.seen++
		g.sum += x
		g.max = math.Max(g.max, x)
		if len(g.kept) < g.size {
			g.kept = append(g.kept, x)
		} else if j := g.rng.Int64N(g.seen); j < int64(g.size) {
			g.kept[j] = x
		}
	}
}

// percentiles is the gaps' summary in milliseconds: mean and maximum over
// every gap, quantiles over the sample.
func (g *gapSample) percentiles() Percentiles {
	if g.seen == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), g.kept...)
	sort.Float64s(s)
	p := quantiles(s)
	p.Mean, p.Max = g.sum/float64(g.seen)*1000, g.max*1000
	return p
}
