package planner_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/planner/plannertest"
)

// fake: a prefill replica carries 4 req/s and a decode replica 10 at the SLO.
var fake = plannertest.Capacity{PrefillRPS: 4, DecodeRPS: 10, TTFTBase: 125, ITLBase: 10}

func newPlanner(t testing.TB, edit func(*planner.Config)) *planner.Planner {
	t.Helper()
	cfg := planner.Config{TTFTms: 500, ITLms: 30, Interval: 30, StartupDelay: 60, Predictor: "constant", TTFTTarget: 1, ITLTarget: 1}
	if edit != nil {
		edit(&cfg)
	}
	p, err := planner.New(cfg, fake)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func obs(t float64, rate float64, pre, dec int) planner.Observation {
	return planner.Observation{Time: t, Interval: 30, Requests: int(rate * 30), MeanISL: 4000, MeanOSL: 500,
		Prefill: pre, Decode: dec, TTFTms: 200, ITLms: 20}
}

func TestSizesPoolsFromCapacity(t *testing.T) {
	cases := []struct {
		rate     float64
		pre, dec int
	}{{1, 1, 1}, {4, 1, 1}, {6, 2, 1}, {12, 3, 2}, {30, 8, 3}}
	for _, tc := range cases {
		p := newPlanner(t, nil)
		d := p.Tick(obs(30, tc.rate, 1, 1))
		if d.Prefill != tc.pre || d.Decode != tc.dec {
			t.Errorf("%.0f req/s: %d prefill + %d decode, want %d + %d (%s)", tc.rate, d.Prefill, d.Decode, tc.pre, tc.dec, d.Reason)
		}
	}
}

func TestHoldsOnStaleMetricsAndNeverScalesToZero(t *testing.T) {
	p := newPlanner(t, nil)
	d := p.Tick(obs(30, 12, 1, 1))
	stale := p.Tick(planner.Observation{Time: 60, Interval: 30, Stale: true, Reason: "prometheus unreachable"})
	if !stale.Held || stale.Prefill != d.Prefill || stale.Decode != d.Decode || !strings.Contains(stale.Reason, "prometheus unreachable") {
		t.Errorf("stale tick %+v should hold %d + %d", stale, d.Prefill, d.Decode)
	}
	first := newPlanner(t, nil).Tick(planner.Observation{Time: 30, Stale: true})
	if first.Prefill < 1 || first.Decode < 1 {
		t.Errorf("a stale first tick scaled to %d + %d", first.Prefill, first.Decode)
	}
	idle := newPlanner(t, nil).Tick(obs(30, 0, 3, 3))
	if idle.Prefill < 1 || idle.Decode < 1 {
		t.Errorf("no traffic scaled to %d + %d", idle.Prefill, idle.Decode)
	}
}

// Scale-down waits for the stabilisation window and the cool-down;
// scale-up is immediate.
func TestScaleDownStabilisesAndCoolsDown(t *testing.T) {
	p := newPlanner(t, func(c *planner.Config) { c.Cooldown, c.Stabilization = 90, 120 })
	d := p.Tick(obs(30, 12, 1, 1))
	if d.Prefill != 3 {
		t.Fatalf("scale-up to 3 prefill expected at once, got %d", d.Prefill)
	}
	var downAt float64
	for tm := 60.0; tm <= 600; tm += 30 {
		d = p.Tick(obs(tm, 1, d.Prefill, d.Decode))
		if d.Prefill < 3 && downAt == 0 {
			downAt = tm
		}
	}
	if downAt < 30+120 {
		t.Errorf("scaled down at %.0f s, inside the 120 s stabilisation window after the peak", downAt)
	}
	if d.Prefill != 1 || d.Decode != 1 {
		t.Errorf("calm traffic should end at 1 + 1, got %d + %d", d.Prefill, d.Decode)
	}
}

func TestGPUBudgetShrinksPrefillFirst(t *testing.T) {
	p := newPlanner(t, func(c *planner.Config) { c.GPUBudget, c.DecodeGPUs = 10, 2 })
	d := p.Tick(obs(30, 30, 1, 1)) // wants 8 prefill + 3 decode = 14 GPUs
	if d.Prefill*1+d.Decode*2 > 10 || d.Decode != 3 || d.Prefill != 4 {
		t.Errorf("budget 10: %d prefill + %d decode, want 4 + 3 (prefill gives way)", d.Prefill, d.Decode)
	}
	if !strings.Contains(d.Reason, "GPU budget") {
		t.Errorf("reason %q should name the budget", d.Reason)
	}
}

func TestReactiveQueueAndKV(t *testing.T) {
	p := newPlanner(t, nil)
	o := obs(30, 2, 2, 1)
	o.QueueDepth = 20
	o.KVUse = 0.95
	d := p.Tick(o)
	if d.Prefill != 3 || d.Decode != 2 {
		t.Errorf("queue 10 per replica and KV 95%%: %d + %d, want 3 + 2 (%s)", d.Prefill, d.Decode, d.Reason)
	}
}

// A queue is counted per attention-DP rank: 20 waiting on two replicas of
// 4 ranks is 2.5 a rank, no reason to scale; on ranks of one it is 10.
func TestQueuePerRank(t *testing.T) {
	for _, tc := range []struct {
		ranks, want int
		reason      string
	}{{1, 3, "queue 10.0 per prefill replica"}, {4, 2, ""}} {
		p := newPlanner(t, func(c *planner.Config) { c.PrefillRanks = tc.ranks })
		o := obs(30, 2, 2, 1)
		o.QueueDepth = 20
		d := p.Tick(o)
		if d.Prefill != tc.want || (tc.reason != "") != strings.Contains(d.Reason, "queue") || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%d ranks a replica: %d prefill, want %d (%s)", tc.ranks, d.Prefill, tc.want, d.Reason)
		}
	}
	if _, err := planner.New(planner.Config{TTFTms: 500, ITLms: 30, PrefillRanks: 5000}, fake); err == nil || !strings.Contains(err.Error(), "prefillRanks") {
		t.Errorf("5,000 ranks: %v", err)
	}
}

// A pool slower than the model (observed TTFT twice the expected) gets
// its capacity corrected down, so more replicas.
func TestCorrectionFromObservedLatency(t *testing.T) {
	p := newPlanner(t, func(c *planner.Config) { c.CorrectionAlpha = 1 })
	o := obs(30, 2, 2, 1)
	o.TTFTms = 2 * fake.PrefillTTFT(4000, 1, 0)
	d := p.Tick(o)
	if math.Abs(d.PrefillCorrection-2) > 1e-9 {
		t.Fatalf("correction %.3f, want 2", d.PrefillCorrection)
	}
	d = p.Tick(obs(60, 6, d.Prefill, d.Decode))
	if d.Prefill != 3 {
		t.Errorf("6 req/s at half the modelled capacity needs 3 prefill, got %d (%s)", d.Prefill, d.Reason)
	}
}

// A full decode pool makes requests wait for a slot, and that wait shows
// as TTFT: the prefill correction holds while the decode cache is above
// its high mark.
func TestNoPrefillCorrectionFromAFullDecodePool(t *testing.T) {
	p := newPlanner(t, func(c *planner.Config) { c.CorrectionAlpha = 1 })
	o := obs(30, 2, 2, 1)
	o.TTFTms = 2 * fake.PrefillTTFT(4000, 1, 0)
	o.KVUse = 0.97
	if d := p.Tick(o); d.PrefillCorrection != 1 {
		t.Errorf("decode cache 97%%: prefill correction %.3f, want 1 (held)", d.PrefillCorrection)
	}
}

// Lead time: with a rising load the trend predictors scale ahead of a
// constant predictor.
func TestPredictiveLeadTime(t *testing.T) {
	var got []int
	for _, kind := range []string{"constant", "holt", "kalman"} {
		p := newPlanner(t, func(c *planner.Config) { c.Predictor = kind; c.StartupDelay = 120 })
		var d planner.Decision
		for i := 1; i <= 6; i++ {
			d = p.Tick(obs(float64(30*i), float64(i), 1, 1))
		}
		got = append(got, d.Prefill)
	}
	if got[1] <= got[0] || got[2] <= got[0] {
		t.Errorf("prefill after a ramp: constant %d, holt %d, kalman %d; trend predictors should lead", got[0], got[1], got[2])
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		edit func(*planner.Config)
		want string
	}{
		{func(c *planner.Config) { c.TTFTms = 0 }, "ttftMs"},
		{func(c *planner.Config) { c.Predictor = "prophet" }, `planner.predictor: "prophet"`},
		{func(c *planner.Config) { c.MinDecode = -1 }, "minPrefill/minDecode"},
		{func(c *planner.Config) { c.MaxPrefill, c.MinPrefill = 2, 3 }, "maxPrefill"},
		{func(c *planner.Config) { c.GPUBudget, c.DecodeGPUs = 3, 4 }, "gpuBudget"},
		{func(c *planner.Config) { c.KVLow, c.KVHigh = 0.9, 0.5 }, "kvLow"},
	}
	for _, tc := range cases {
		cfg := planner.Config{TTFTms: 500, ITLms: 30}
		tc.edit(&cfg)
		if _, err := planner.New(cfg, fake); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to name %q", err, tc.want)
		}
	}
}

// BenchmarkTick is one decision on the performance-model-free fake.
func BenchmarkTick(b *testing.B) {
	p := newPlanner(b, func(c *planner.Config) { c.Predictor = "arima" })
	i := 0
	for b.Loop() {
		i++
		p.Tick(obs(float64(30*i), 5+3*math.Sin(float64(i)/10), 2, 1))
	}
}

// One bad sample never reaches a predictor: the planner holds, says why,
// and is back at the right size within two intervals of recovery.
func TestBadSamplesHold(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	bad := map[string]func(o *planner.Observation){
		"NaN TTFT":         func(o *planner.Observation) { o.TTFTms = nan },
		"NaN ISL":          func(o *planner.Observation) { o.MeanISL = nan },
		"Inf OSL":          func(o *planner.Observation) { o.MeanOSL = inf },
		"1e30 requests":    func(o *planner.Observation) { o.Requests = 1 << 62 },
		"negative request": func(o *planner.Observation) { o.Requests = -5 },
		"negative queue":   func(o *planner.Observation) { o.QueueDepth = -1 },
		"KV use 7":         func(o *planner.Observation) { o.KVUse = 7 },
		"NaN interval":     func(o *planner.Observation) { o.Interval = nan },
	}
	for name, spoil := range bad {
		p := newPlanner(t, func(c *planner.Config) { c.Predictor = planner.PredictHolt })
		now := 30.0
		var d planner.Decision
		for range 5 {
			d = p.Tick(obs(now, 12, d.Prefill, d.Decode))
			now += 30
		}
		want := d
		for range 3 {
			o := obs(now, 12, d.Prefill, d.Decode)
			spoil(&o)
			d = p.Tick(o)
			if !d.Held || !strings.Contains(d.Reason, "implausible") || d.Prefill != want.Prefill || d.Decode != want.Decode {
				t.Errorf("%s: %+v, want a hold at %d + %d", name, d, want.Prefill, want.Decode)
			}
			now += 30
		}
		for range 2 {
			d = p.Tick(obs(now, 12, d.Prefill, d.Decode))
			now += 30
		}
		if d.Prefill != want.Prefill || d.Decode != want.Decode || math.IsNaN(d.PredictedRate) {
			t.Errorf("%s: after recovery %d + %d (predicted %g), want %d + %d", name, d.Prefill, d.Decode, d.PredictedRate, want.Prefill, want.Decode)
		}
	}
}

func TestConfigRefusesNonsense(t *testing.T) {
	for name, edit := range map[string]func(c *planner.Config){
		"cooldownSeconds":      func(c *planner.Config) { c.Cooldown = -30 },
		"stabilizationSeconds": func(c *planner.Config) { c.Stabilization = -1 },
		"kvLow":                func(c *planner.Config) { c.KVLow = -0.2 },
		"queueLow":             func(c *planner.Config) { c.QueueLow = -1 },
		"intervalSeconds":      func(c *planner.Config) { c.Interval = 1e-9 },
		"ttftTarget":           func(c *planner.Config) { c.TTFTTarget = math.NaN() },
		"ttftMs":               func(c *planner.Config) { c.TTFTms = math.Inf(1) },
		"maxPrefill":           func(c *planner.Config) { c.MaxPrefill = 1 << 30 },
		"startupDelaySeconds":  func(c *planner.Config) { c.StartupDelay = 1e12 },
	} {
		cfg := planner.Config{TTFTms: 500, ITLms: 30}
		edit(&cfg)
		if _, err := planner.New(cfg, fake); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
