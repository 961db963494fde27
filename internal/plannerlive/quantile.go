package plannerlive

import (
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
)

// buckets is a histogram's cumulative counts by upper bound, summed over
// workers, so that an interval's percentile comes from the difference of
// two scrapes the way PromQL's histogram_quantile over increase() does.
type buckets map[float64]float64

func histogramBuckets(f *dto.MetricFamily) buckets {
	b := buckets{}
	if f == nil {
		return b
	}
	for _, m := range f.GetMetric() {
		for _, x := range m.GetHistogram().GetBucket() {
			b[x.GetUpperBound()] += float64(x.GetCumulativeCount())
		}
	}
	return b
}

func (b buckets) plus(o buckets) buckets {
	out := buckets{}
	for k, v := range b {
		out[k] += v
	}
	for k, v := range o {
		out[k] += v
	}
	return out
}

func (b buckets) minus(o buckets) buckets {
	out := buckets{}
	for k, v := range b {
		out[k] = v - o[k]
	}
	return out
}

// quantile interpolates linearly inside the bucket that holds rank q of
// the observations; 0 when the histogram is empty or inconsistent, so a
// bad sample never reaches the planner as a latency.
func (b buckets) quantile(q float64) float64 {
	bounds := make([]float64, 0, len(b))
	for k := range b {
		bounds = append(bounds, k)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := b[bounds[len(bounds)-1]]
	if !(total > 0) || math.IsInf(total, 0) || !(q >= 0 && q <= 1) {
		return 0
	}
	for i, ub := range bounds {
		c := b[ub]
		if math.IsNaN(ub) || ub < 0 || math.IsNaN(c) || c < 0 || math.IsInf(c, 0) {
			return 0 // not a latency histogram
		}
		if i > 0 && c < b[bounds[i-1]] {
			return 0 // cumulative counts went down: a reset inside the interval
		}
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, ub := range bounds {
		c := b[ub]
		if c >= rank {
			if math.IsInf(ub, 1) {
				return lower // beyond the last finite bound: report that bound
			}
			if c == below {
				return ub
			}
			v := lower + (ub-lower)*((rank-below)/(c-below))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return ub // sums too large to interpolate: the bucket's bound
			}
			return v
		}
		lower, below = ub, c
	}
	if math.IsInf(lower, 1) {
		return 0
	}
	return lower
}
