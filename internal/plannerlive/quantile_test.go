package plannerlive

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/planner"
)

func TestBucketsQuantile(t *testing.T) {
	inf := math.Inf(1)
	// 100 observations: 10 below 0.1 s, 80 in (0.1, 0.5], 10 in (0.5, 1].
	b := buckets{0.1: 10, 0.5: 90, 1: 100, inf: 100}
	for _, tc := range []struct{ q, want float64 }{
		{0.05, 0.05}, {0.1, 0.1}, {0.5, 0.3}, {0.9, 0.5}, {0.95, 0.75}, {1, 1},
	} {
		if got := b.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q %g: %g, want %g", tc.q, got, tc.want)
		}
	}
	// Beyond the last finite bound the bound is reported, as PromQL does.
	if got := (buckets{0.1: 0, 1: 5, inf: 10}).quantile(0.9); got != 1 {
		t.Errorf("tail in +Inf: %g, want 1", got)
	}
	// Empty and inconsistent histograms give no value, never NaN.
	for _, bad := range []buckets{{}, {0.1: 0, inf: 0}, {0.1: 5, 1: 3, inf: 5}, {0.1: math.NaN(), inf: math.NaN()}} {
		if got := bad.quantile(0.9); got != 0 {
			t.Errorf("%v: %g, want 0", bad, got)
		}
	}
	// An interval is the difference of two scrapes.
	prev := buckets{0.1: 5, 1: 5, inf: 5}
	cur := buckets{0.1: 5, 1: 15, inf: 15}
	if got := cur.minus(prev).quantile(0.5); math.Abs(got-0.55) > 1e-9 {
		t.Errorf("interval median %g, want 0.55", got)
	}
}

func TestFoldReadsThePercentiles(t *testing.T) {
	inf := math.Inf(1)
	prev := [2]counters{{success: 10, ttftB: buckets{0.1: 10, 1: 10, inf: 10}}, {success: 10, itlB: buckets{0.01: 10, 0.1: 10, inf: 10}}}
	cur := [2]counters{{success: 30, ttftCount: 20, ttftSum: 10, ttftB: buckets{0.1: 10, 1: 30, inf: 30}},
		{success: 30, itlCount: 20, itlSum: 1, itlB: buckets{0.01: 10, 0.1: 30, inf: 30}}}
	o := fold(planner.Observation{}, &prev, &cur, 30, 90, 50)
	if math.Abs(o.TTFTQms-910) > 1e-6 || math.Abs(o.ITLQms-55) > 1e-6 {
		t.Errorf("p90 TTFT %.1f ms (want 910), p50 ITL %.1f ms (want 55)", o.TTFTQms, o.ITLQms)
	}
	if o := fold(planner.Observation{}, &prev, &cur, 30, 0, 0); o.TTFTQms != 0 || o.ITLQms != 0 {
		t.Errorf("no percentile asked, got %g and %g", o.TTFTQms, o.ITLQms)
	}
}

func TestBucketsQuantileExtremes(t *testing.T) {
	inf := math.Inf(1)
	for _, b := range []buckets{
		{1e308: -1e308, 2e307: 1e308, inf: 1e308}, {-1: 1, inf: 2}, {math.NaN(): 1, inf: 1}, {1e308: 1, 1.7e308: 1e308, inf: 1e308},
	} {
		for _, q := range []float64{0, 0.5, 0.9, 1} {
			if v := b.quantile(q); math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Errorf("%v at %g: %g", b, q, v)
			}
		}
	}
}
