package perf

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

func TestRatioUpper(t *testing.T) {
	r := Ratio{P10: 0.8, P50: 1.1, P90: 1.6}
	if got := r.Upper(10, 0.9); math.Abs(got-16) > 1e-9 {
		t.Errorf("upper at 0.9: %g, want P90 x 10 = 16", got)
	}
	if got := r.Upper(10, 0.5); math.Abs(got-11) > 1e-9 {
		t.Errorf("upper at 0.5: %g, want the median x 10 = 11", got)
	}
	if lo, hi := r.Upper(10, 0.7), r.Upper(10, 0.95); !(lo > 11 && lo < 16 && hi > 16) {
		t.Errorf("upper at 0.7 %g and 0.95 %g: want between the median and P90, and above P90", lo, hi)
	}
	if x := r.Interval(10); x != [2]float64{8, 16} {
		t.Errorf("interval %v", x)
	}
}

func TestNewRatioQuantiles(t *testing.T) {
	var xs []float64
	for i := range 101 {
		xs = append(xs, float64(100-i)/100) // 1.00 down to 0.00, unsorted input
	}
	if r := NewRatio(xs); math.Abs(r.P10-0.1) > 1e-9 || math.Abs(r.P50-0.5) > 1e-9 || math.Abs(r.P90-0.9) > 1e-9 {
		t.Errorf("quantiles %+v, want 0.1, 0.5, 0.9", r)
	}
	if r := NewRatioTail(xs, 0.05); math.Abs(r.P10-0.05) > 1e-9 || math.Abs(r.P50-0.5) > 1e-9 || math.Abs(r.P90-0.95) > 1e-9 || r.Tail != 0.05 {
		t.Errorf("quantiles at tail 0.05: %+v, want 0.05, 0.5, 0.95 and the tail recorded", r)
	}
}

func TestIntervalsValidation(t *testing.T) {
	good := Ratio{P10: 0.7, P50: 1, P90: 1.4}
	for name, kind := range map[string]*IntervalKind{
		"n must be":          {N: 0, TTFT: good, TPOT: good},
		"tpot: p10":          {N: 30, TTFT: good, TPOT: Ratio{P10: 1.5, P50: 1, P90: 2}},
		"ttft: p10 0":        {N: 30, TTFT: Ratio{P10: 0, P50: 1, P90: 2}, TPOT: good},
		"ttft: p10 NaN":      {N: 30, TTFT: Ratio{P10: math.NaN(), P50: 1, P90: 2}, TPOT: good},
		"tpot: p10 0.5, p50": {N: 30, TTFT: good, TPOT: Ratio{P10: 0.5, P50: 1, P90: math.Inf(1)}},
		"ttft.tail: 0.2":     {N: 30, TTFT: Ratio{P10: 0.7, P50: 1, P90: 1.4, Tail: 0.2}, TPOT: good},
		"tpot.tail: -0.05":   {N: 30, TTFT: good, TPOT: Ratio{P10: 0.7, P50: 1, P90: 1.4, Tail: -0.05}},
	} {
		p := MustDefaultParams().Clone()
		p.Intervals = &Intervals{Kinds: map[string]*IntervalKind{"vllm/dense-agg": kind}}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "intervals.kinds.vllm/dense-agg") || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	p := MustDefaultParams().Clone()
	wide := Ratio{P10: 0.6, P50: 1, P90: 1.6, Tail: 0.05}
	p.Intervals = &Intervals{Kinds: map[string]*IntervalKind{"vllm/dense-agg": {N: 30, TTFT: good, TPOT: wide}}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	// They survive a round trip through the file format.
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseParams(b, "round trip")
	if err != nil || q.Intervals.For("vllm/dense-agg") == nil || q.Intervals.For("vllm/dense-agg").TTFT != good || q.Intervals.For("vllm/dense-agg").TPOT != wide {
		t.Errorf("round trip: %v %+v", err, q)
	}
	if (*Intervals)(nil).For("vllm/dense-agg") != nil {
		t.Error("no intervals: want nil")
	}
}

// The embedded parameters carry held-out intervals for each backend's
// dense aggregated runs, from enough runs to mean something.
func TestDefaultParamsCarryIntervals(t *testing.T) {
	iv := MustDefaultParams().Intervals
	for _, b := range Backends {
		k := iv.For(IntervalKey(b, false, "agg"))
		if k == nil || k.N < 20 {
			t.Errorf("%s dense agg: %+v, want an interval from at least 20 held-out runs", b, k)
		}
	}
}

// A spread holds only for predictions priced the way it was measured: on
// the roofline, or from kernel tables.
func TestIntervalForFollowsKernels(t *testing.T) {
	tables := func(*catalog.GPU, Backend) (Kernels, *catalog.GPU, error) { return nil, nil, nil }
	roof := &IntervalKind{N: 30, TTFT: Ratio{P10: 0.8, P50: 1, P90: 1.3}, TPOT: Ratio{P10: 0.8, P50: 1, P90: 1.3}}
	tab := &IntervalKind{N: 20, TTFT: Ratio{P10: 0.5, P50: 1, P90: 2}, TPOT: Ratio{P10: 0.5, P50: 1, P90: 2}}
	key := "vllm/dense-agg"
	for _, tc := range []struct {
		name        string
		kinds, kern map[string]*IntervalKind
		source      KernelSource
		want        *IntervalKind
		why         string
	}{
		{"roofline spread, roofline run", map[string]*IntervalKind{key: roof}, nil, nil, roof, ""},
		{"roofline spread, run with tables", map[string]*IntervalKind{key: roof}, nil, tables, nil, "measured without --kernels"},
		{"both, run with tables", map[string]*IntervalKind{key: roof}, map[string]*IntervalKind{key: tab}, tables, tab, ""},
		{"both, roofline run", map[string]*IntervalKind{key: roof}, map[string]*IntervalKind{key: tab}, nil, roof, ""},
		{"tables spread, roofline run", nil, map[string]*IntervalKind{key: tab}, nil, nil, "measured with --kernels"},
		{"another kind only", map[string]*IntervalKind{"sglang/moe-agg": roof}, nil, tables, nil, ""},
	} {
		p := &Params{Kernels: tc.source, Intervals: &Intervals{Kinds: tc.kinds, KernelKinds: tc.kern}}
		k, why := p.IntervalFor(key)
		if k != tc.want || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("%s: kind %v, why %q; want %v, why %q", tc.name, k, why, tc.want, tc.why)
		}
	}
	if k, why := (&Params{}).IntervalFor(key); k != nil || why != "" {
		t.Errorf("no intervals: %v, %q", k, why)
	}
	bad := &Intervals{KernelKinds: map[string]*IntervalKind{key: {N: 0}}}
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "intervals.kernelKinds.vllm/dense-agg: n must be at least 1") {
		t.Errorf("a bad kernel kind: %v", err)
	}
}
