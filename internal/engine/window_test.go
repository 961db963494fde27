package engine

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// WindowPairs against a brute-force sum: each query at (continuous)
// position x sees min(x, window) keys, integrated in small steps.
func TestWindowPairsOracle(t *testing.T) {
	for _, tc := range []struct{ ctx, c, w int }{
		{0, 100, 1000}, {0, 4000, 128}, {100, 50, 128}, {120, 50, 128}, {500, 300, 128}, {0, 1, 1}, {2048, 8192, 2048},
	} {
		var sum float64
		const steps = 100
		for i := 0; i < tc.c*steps; i++ {
			x := float64(tc.ctx) + (float64(i)+0.5)/steps
			sum += math.Min(x, float64(tc.w)) / steps
		}
		if got := WindowPairs(tc.ctx, tc.c, tc.w); math.Abs(got-sum) > 1e-6*sum+1e-3 {
			t.Errorf("WindowPairs(%d, %d, %d) = %g, oracle %g", tc.ctx, tc.c, tc.w, got, sum)
		}
	}
	// A window past the chunk is full causal attention; chunks add up.
	if got, full := WindowPairs(300, 200, 10_000), 200*(300+200/2.0); got != full {
		t.Errorf("wide window: %g, full attention %g", got, full)
	}
	if a, b, ab := WindowPairs(0, 700, 512), WindowPairs(700, 900, 512), WindowPairs(0, 1600, 512); math.Abs(a+b-ab) > 1e-9 {
		t.Errorf("chunks %g + %g != whole %g", a, b, ab)
	}
}

// windowCost records the batches a windowed model's engine prices.
type windowCost struct {
	linearCost
	window  int
	sliding float64
	full    float64
}

func (c *windowCost) FixedStepTime(b perf.Batch) float64 {
	c.sliding += b.PrefillSlidingPairs
	c.full += b.PrefillPairs
	return c.linearCost.FixedStepTime(b)
}
func (c *windowCost) AttentionWindow() int { return c.window }

func TestEngineSumsWindowedPairs(t *testing.T) {
	for _, window := range []int{0, 256} {
		cost := &windowCost{linearCost: linearCost{base: 1e-3, perToken: 1e-6}, window: window}
		e, err := New(Config{Role: Prefill, MaxBatchedTokens: 512, MaxSeqs: 8, KVTokens: 100_000}, cost, newRecorder())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Submit(&Request{ID: 1, ISL: 2000, OSL: 1}, 0); err != nil {
			t.Fatal(err)
		}
		drain(t, e)
		want := 0.0
		if window > 0 {
			want = WindowPairs(0, 2000, window)
		}
		if math.Abs(cost.sliding-want) > 1e-6 || math.Abs(cost.full-2000*1000) > 1e-6 {
			t.Errorf("window %d: windowed pairs %g (want %g), full %g (want %d)", window, cost.sliding, want, cost.full, 2000*1000)
		}
	}
}
