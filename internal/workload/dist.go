package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Fixed always returns N.
type Fixed struct{ N int }

// Sample implements Dist.
func (f Fixed) Sample(*rand.Rand) int { return f.N }

// Normal is a normal distribution clamped to [Min, Max] (Min defaults to 1).
type Normal struct {
	Mean, Std float64
	Min, Max  int
}

// Sample implements Dist.
func (n Normal) Sample(r *rand.Rand) int { return clamp(n.Mean+n.Std*r.NormFloat64(), n.Min, n.Max) }

// LogNormal has median Median and shape Sigma (the std-dev of the log),
// clamped to [Min, Max]. Prompt and output lengths of real traffic are
// close to log-normal.
type LogNormal struct {
	Median, Sigma float64
	Min, Max      int
}

// Sample implements Dist.
func (l LogNormal) Sample(r *rand.Rand) int {
	return clamp(l.Median*math.Exp(l.Sigma*r.NormFloat64()), l.Min, l.Max)
}

// Empirical draws from observed values with optional weights.
type Empirical struct {
	values []int
	cum    []float64
}

// NewEmpirical builds an empirical distribution; weights may be nil (uniform).
func NewEmpirical(values []int, weights []float64) (*Empirical, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("empirical distribution: no values")
	}
	if weights != nil && len(weights) != len(values) {
		return nil, fmt.Errorf("empirical distribution: %d weights for %d values", len(weights), len(values))
	}
	e := &Empirical{values: append([]int(nil), values...), cum: make([]float64, len(values))}
	total := 0.0
	for i := range values {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		if w < 0 || values[i] < 1 {
			return nil, fmt.Errorf("empirical distribution: value %d weight %g: values must be >= 1 and weights >= 0", values[i], w)
		}
		total += w
		e.cum[i] = total
	}
	if total <= 0 {
		return nil, fmt.Errorf("empirical distribution: weights sum to zero")
	}
	for i := range e.cum {
		e.cum[i] /= total
	}
	return e, nil
}

// Sample implements Dist.
func (e *Empirical) Sample(r *rand.Rand) int {
	u := r.Float64()
	i := sort.SearchFloat64s(e.cum, u)
	if i >= len(e.values) {
		i = len(e.values) - 1
	}
	return e.values[i]
}

func clamp(x float64, lo, hi int) int {
	if lo < 1 {
		lo = 1
	}
	v := int(math.Round(x))
	if v < lo {
		v = lo
	}
	if hi > 0 && v > hi {
		v = hi
	}
	return v
}
