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
	return intervalsAt(preds, source, tails{perf.NominalTail, perf.NominalTail})
}

// tails are the shares of runs an interval leaves out on each side, for
// TTFT and TPOT.
type tails [2]float64

func intervalsAt(preds []Prediction, source string, t tails) *perf.Intervals {
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
		iv.Kinds[k] = &perf.IntervalKind{N: len(a.ttft), TTFT: perf.NewRatioTail(a.ttft, t[0]), TPOT: perf.NewRatioTail(a.tpot, t[1])}
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
	return crossCoverageAt(preds, by, env, tails{perf.NominalTail, perf.NominalTail})
}

func crossCoverageAt(preds []Prediction, by string, env estimate.Env, t tails) (Coverage, error) {
	key, err := cvKey(by, env.Catalog)
	if err != nil {
		return Coverage{}, err
	}
	names, groups := groupBy(preds, func(p Prediction) string { return key(p.Case) })
	var half [2][]Prediction
	for i, g := range names {
		half[i%2] = append(half[i%2], groups[g]...)
	}
	var out pooled
	for i := range 2 {
		out.add(IntervalCoverage(intervalsAt(half[i], "", t), half[1-i]))
	}
	return out.coverage(), nil
}

// pooled sums coverages over sets of runs.
type pooled Coverage

func (p *pooled) add(c Coverage) {
	p.TTFTInside += c.TTFTInside * float64(c.N)
	p.TPOTInside += c.TPOTInside * float64(c.N)
	p.N += c.N
}

// coverage is the pooled share inside.
func (p pooled) coverage() Coverage {
	if p.N > 0 {
		p.TTFTInside /= float64(p.N)
		p.TPOTInside /= float64(p.N)
	}
	return Coverage(p)
}

// IntervalTails are the tail shares CalibratedIntervals tries, from the
// nominal 80% interval's outward.
var IntervalTails = []float64{0.10, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02, 0.01}

// NominalCoverage is the share of runs an 80% interval should hold.
const NominalCoverage = 1 - 2*perf.NominalTail

// minCalibrationGroups is the fewest groups a kind's runs must come from
// before its tails move: with fewer, the split sets one group against
// another, which says how far those two lie apart, not how unseen groups
// scatter.
const minCalibrationGroups = 4

// coverageSlack is how far under NominalCoverage a cross-fitted coverage
// may fall and still count as reaching it: on 2,000 runs an honest 80%
// interval's coverage scatters by about a point.
const coverageSlack = 0.01

// CalibratedIntervals is Intervals with each kind's and latency's tails
// narrowed (the interval widened) to the first of IntervalTails at which
// runs of groups held out land inside 80% of the time (CrossCoverage
// within coverageSlack, on that kind's runs), or to the last. Groups
// differ more from each other than runs of one group do, so quantiles of
// the pooled held-out ratios cover fewer of an unseen group's runs than
// they say. A kind whose runs come from fewer than minCalibrationGroups
// groups keeps the nominal tails. The coverage returned pools the kinds at
// their tails: chosen on the same split, it is the figure they were
// chosen to reach, not an independent check.
func CalibratedIntervals(preds []Prediction, by string, env estimate.Env, source string) (*perf.Intervals, Coverage, error) {
	key, err := cvKey(by, env.Catalog)
	if err != nil {
		return nil, Coverage{}, err
	}
	byKind := map[string][]Prediction{}
	for _, p := range preds {
		if k, ok := p.IntervalKey(); ok {
			byKind[k] = append(byKind[k], p)
		}
	}
	iv := &perf.Intervals{Source: source, Kinds: map[string]*perf.IntervalKind{}}
	var cov pooled
	for k, kp := range byKind {
		t := tails{perf.NominalTail, perf.NominalTail}
		if groups, _ := groupBy(kp, func(p Prediction) string { return key(p.Case) }); len(groups) >= minCalibrationGroups {
			if t, err = widen(kp, by, env); err != nil {
				return nil, Coverage{}, err
			}
		}
		kind := intervalsAt(kp, source, t).For(k)
		if kind == nil {
			continue // too few runs
		}
		iv.Kinds[k] = kind
		c, err := crossCoverageAt(kp, by, env, t)
		if err != nil {
			return nil, Coverage{}, err
		}
		cov.add(c)
	}
	if env.Params != nil && env.Params.Kernels != nil {
		// Spreads of the tables' predictions hold for those alone.
		iv.Kinds, iv.KernelKinds = map[string]*perf.IntervalKind{}, iv.Kinds
	}
	return iv, cov.coverage(), nil
}

// widen is, per latency, the first of IntervalTails at which the runs'
// cross-fitted coverage reaches NominalCoverage, or the last.
func widen(preds []Prediction, by string, env estimate.Env) (tails, error) {
	var t tails
	var found [2]bool
	for _, tail := range IntervalTails {
		c, err := crossCoverageAt(preds, by, env, tails{tail, tail})
		if err != nil {
			return t, err
		}
		for i, inside := range []float64{c.TTFTInside, c.TPOTInside} {
			if !found[i] {
				t[i], found[i] = tail, inside >= NominalCoverage-coverageSlack
			}
		}
		if found[0] && found[1] {
			break
		}
	}
	return t, nil
}
