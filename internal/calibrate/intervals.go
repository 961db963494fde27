package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// IntervalKey is the kind of query c is, as perf.Intervals keys it;
// false for a backend the model does not know.
func (c Case) IntervalKey() (string, bool) {
	be, err := perf.ParseBackend(c.Backend)
	if err != nil {
		return "", false
	}
	return perf.IntervalKey(be, !c.Dense, c.Mode), true
}

// MinIntervalRuns is the fewest held-out runs a kind of query needs for
// its interval: fewer would make the 10th and 90th percentiles noise.
const MinIntervalRuns = 20

// Intervals turns held-out predictions into the spread of measured over
// predicted TTFT and TPOT per kind of query (backend, dense or MoE,
// aggregated or disaggregated). Only measured-serving runs with both
// latencies count; kinds with fewer than MinIntervalRuns are left out.
func Intervals(preds []Prediction, source string) *perf.Intervals {
	type acc struct{ ttft, tpot []float64 }
	kinds := map[string]*acc{}
	for _, p := range preds {
		if p.Err != "" || p.Source != "silicon" || p.TTFTms <= 0 || p.TPOTms <= 0 || p.PredTTFTms <= 0 || p.PredTPOTms <= 0 {
			continue
		}
		k, ok := p.IntervalKey()
		if !ok {
			continue
		}
		if kinds[k] == nil {
			kinds[k] = &acc{}
		}
		kinds[k].ttft = append(kinds[k].ttft, p.TTFTms/p.PredTTFTms)
		kinds[k].tpot = append(kinds[k].tpot, p.TPOTms/p.PredTPOTms)
	}
	iv := &perf.Intervals{Source: source, Kinds: map[string]*perf.IntervalKind{}}
	for k, a := range kinds {
		if len(a.ttft) < MinIntervalRuns {
			continue
		}
		iv.Kinds[k] = &perf.IntervalKind{N: len(a.ttft), TTFT: perf.NewRatio(a.ttft), TPOT: perf.NewRatio(a.tpot)}
	}
	return iv
}

// Coverage is the share of held-out runs whose measurement falls inside
// its 80% interval, per latency: near 0.8 when the intervals are honest.
type Coverage struct {
	N          int     `json:"n"`
	TTFTInside float64 `json:"ttft_inside"`
	TPOTInside float64 `json:"tpot_inside"`
}

// IntervalCoverage scores intervals on predictions (of runs other than
// those the intervals came from, to be honest).
func IntervalCoverage(iv *perf.Intervals, preds []Prediction) Coverage {
	var c Coverage
	in := func(meas float64, r perf.Ratio, pred float64) float64 {
		x := r.Interval(pred)
		if meas >= x[0] && meas <= x[1] {
			return 1
		}
		return 0
	}
	for _, p := range preds {
		if p.Err != "" || p.Source != "silicon" || p.TTFTms <= 0 || p.TPOTms <= 0 {
			continue
		}
		key, ok := p.IntervalKey()
		k := iv.For(key)
		if !ok || k == nil {
			continue
		}
		c.N++
		c.TTFTInside += in(p.TTFTms, k.TTFT, p.PredTTFTms)
		c.TPOTInside += in(p.TPOTms, k.TPOT, p.PredTPOTms)
	}
	if c.N > 0 {
		c.TTFTInside /= float64(c.N)
		c.TPOTInside /= float64(c.N)
	}
	return c
}

// CrossCoverage scores intervals honestly: the held-out predictions'
// groups (the cross-validation units) are split in two halves; intervals
// taken from one half are scored on the other, both ways, and the two
// coverages are pooled.
func CrossCoverage(preds []Prediction, by string, env estimate.Env) (Coverage, error) {
	key, err := cvKey(by, env.Catalog)
	if err != nil {
		return Coverage{}, err
	}
	names, groups := groupBy(preds, func(p Prediction) string { return key(p.Case) })
	var half [2][]Prediction
	for i, g := range names {
		half[i%2] = append(half[i%2], groups[g]...)
	}
	var out Coverage
	for i := range 2 {
		c := IntervalCoverage(Intervals(half[i], ""), half[1-i])
		out.TTFTInside += c.TTFTInside * float64(c.N)
		out.TPOTInside += c.TPOTInside * float64(c.N)
		out.N += c.N
	}
	if out.N > 0 {
		out.TTFTInside /= float64(out.N)
		out.TPOTInside /= float64(out.N)
	}
	return out, nil
}
