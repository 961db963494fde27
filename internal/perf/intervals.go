package perf

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Ratio is the spread of measured over predicted values on runs the
// parameters were not fitted to: a prediction times P10 and P90 is its
// 80% interval. P10 and P90 are the ratios' quantiles at Tail and 1-Tail;
// Tail is 0.1 (written as 0) unless calibration widened the interval
// until runs of groups it never saw land inside it 80% of the time.
type Ratio struct {
	P10  float64 `json:"p10"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	Tail float64 `json:"tail,omitempty"`
}

// IntervalKind is the held-out spread of one kind of query.
type IntervalKind struct {
	// N is the held-out runs the ratios come from.
	N    int   `json:"n"`
	TTFT Ratio `json:"ttft"`
	TPOT Ratio `json:"tpot"`
}

// Intervals are the held-out spreads per kind of query, keyed
// "<backend>/<dense|moe>-<agg|disagg>" (IntervalKey).
type Intervals struct {
	Source string                   `json:"source,omitempty"`
	Kinds  map[string]*IntervalKind `json:"kinds"`
	// KernelKinds are spreads of predictions that priced operations from
	// kernel tables (--kernels): the tables move the predictions, so a
	// spread holds only for predictions priced the way it was measured.
	KernelKinds map[string]*IntervalKind `json:"kernelKinds,omitempty"`
}

// IntervalKey names a kind of query.
func IntervalKey(b Backend, moe bool, mode string) string {
	arch := "dense"
	if moe {
		arch = "moe"
	}
	return fmt.Sprintf("%s/%s-%s", b, arch, mode)
}

// For is the kind's spread, or nil when none was measured.
func (iv *Intervals) For(key string) *IntervalKind {
	if iv == nil {
		return nil
	}
	return iv.Kinds[key]
}

// IntervalFor is the spread of a kind of query for predictions priced as
// p prices them. A spread measured with kernel tables does not hold for
// the roofline, nor the other way round: the tables move the predictions
// (dense aggregated TPOT 10.2% MAPE on the roofline, 17.5% with the
// tables). Where the kind has a spread measured the other way, why says so.
func (p *Params) IntervalFor(key string) (k *IntervalKind, why string) {
	iv := p.Intervals
	if iv == nil {
		return nil, ""
	}
	own, other, how, fix := iv.Kinds, iv.KernelKinds, "with --kernels", "add --kernels, or use parameters whose spreads were measured without it"
	if p.Kernels != nil {
		own, other, how, fix = iv.KernelKinds, iv.Kinds, "without --kernels", "leave out --kernels, or use --params from gpuplane --kernels DIR calibrate --cv model --out FILE"
	}
	if k := own[key]; k != nil {
		return k, ""
	}
	if other[key] != nil {
		return nil, fmt.Sprintf("the parameters' held-out spread of %s runs was measured %s, which moves the predictions; %s", key, how, fix)
	}
	return nil, ""
}

// Interval is the 80% interval of a prediction.
func (r Ratio) Interval(pred float64) [2]float64 { return [2]float64{pred * r.P10, pred * r.P90} }

// Upper is the value a prediction stays under with probability
// confidence (0.5 to 0.99), taking the log ratio as normal between the
// median and P90: the median scaled by (P90/P50)^(z(c)/z(0.9)).
func (r Ratio) Upper(pred, confidence float64) float64 {
	z := distuv.UnitNormal.Quantile(confidence) / distuv.UnitNormal.Quantile(0.9)
	return pred * r.P50 * math.Pow(r.P90/r.P50, z)
}

// NominalTail is the share of runs an 80% interval leaves on each side.
const NominalTail = 0.1

// NewRatio takes quantiles of measured/predicted ratios.
func NewRatio(ratios []float64) Ratio { return NewRatioTail(ratios, NominalTail) }

// NewRatioTail takes the median and the quantiles at tail and 1-tail of
// measured/predicted ratios (tail in (0, NominalTail]).
func NewRatioTail(ratios []float64, tail float64) Ratio {
	s := append([]float64(nil), ratios...)
	sort.Float64s(s)
	r := Ratio{P10: Quantile(s, tail), P50: Quantile(s, 0.5), P90: Quantile(s, 1-tail)}
	if tail != NominalTail {
		r.Tail = tail
	}
	return r
}

// Quantile of sorted xs, interpolating linearly between the order
// statistics; NaN when there are none.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

func (iv *Intervals) validate() error {
	for _, set := range []struct {
		name  string
		kinds map[string]*IntervalKind
	}{{"kinds", iv.Kinds}, {"kernelKinds", iv.KernelKinds}} {
		keys := make([]string, 0, len(set.kinds))
		for k := range set.kinds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kind := set.kinds[k]
			if kind == nil || kind.N < 1 {
				return fmt.Errorf("intervals.%s.%s: n must be at least 1", set.name, k)
			}
			for name, r := range map[string]Ratio{"ttft": kind.TTFT, "tpot": kind.TPOT} {
				if !(r.P10 > 0 && r.P10 <= r.P50 && r.P50 <= r.P90 && r.P90 < 1000) {
					return fmt.Errorf("intervals.%s.%s.%s: p10 %g, p50 %g, p90 %g must be positive, rising and under 1000", set.name, k, name, r.P10, r.P50, r.P90)
				}
				if !(r.Tail >= 0 && r.Tail <= NominalTail) {
					return fmt.Errorf("intervals.%s.%s.%s.tail: %g must be in (0, %g], or 0 for %g", set.name, k, name, r.Tail, NominalTail, NominalTail)
				}
			}
		}
	}
	return nil
}
