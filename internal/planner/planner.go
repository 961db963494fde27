// Package planner is gpuplane's SLO planner: a deterministic state machine
// that, once per adjustment interval, turns observed traffic and latency
// into desired prefill and decode replica counts. It predicts the load one
// start-up delay ahead, sizes each pool from the performance model's
// per-replica capacity, corrects that capacity by the ratio of observed to
// expected latency, reacts to queues and KV-cache pressure, and respects
// cool-downs, stabilisation and limits. It is pure: time comes in with each
// observation, and the same core runs in the simulator and live.
package planner

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// Capacity is what the planner needs to know about one prefill and one
// decode replica (implemented by internal/capacity on the performance model).
type Capacity interface {
	// PrefillTTFT is the TTFT in ms at percentile pct (0: the mean) of a
	// prefill replica taking rate req/s of isl-token prompts (+Inf past saturation).
	PrefillTTFT(isl, rate, pct float64) float64
	// PrefillRate is the most req/s a prefill replica takes with its TTFT
	// at percentile pct (0: the mean) inside ttftMs.
	PrefillRate(isl, ttftMs, pct float64) float64
	// DecodeITL is the ITL in ms of a decode replica holding batch requests.
	DecodeITL(isl, osl, batch float64) float64
	// DecodeRate is the most req/s a decode replica takes inside itlMs.
	DecodeRate(isl, osl, itlMs float64) float64
}

// Observation is the traffic of the interval that just ended.
type Observation struct {
	// Time is the end of the interval in seconds.
	Time float64
	// Prefill and Decode are the replicas the pools have (ready or starting).
	Prefill, Decode int
	// Requests arrived over Interval seconds, with these mean sizes.
	Requests         int
	Interval         float64
	MeanISL, MeanOSL float64
	// TTFTms and ITLms are the observed means (0: none completed).
	TTFTms, ITLms float64
	// TTFTQms and ITLQms are the observed values at the SLO's percentiles
	// (from the engines' histograms; 0: not known, the means stand in).
	TTFTQms, ITLQms float64
	// QueueDepth is requests waiting for their first token; KVUse the decode pool's mean cache use (0..1).
	QueueDepth int
	KVUse      float64
	// Stale marks missing or outdated metrics: the planner holds.
	Stale  bool
	Reason string
}

// Decision is the planner's answer for one tick.
type Decision struct {
	Time    float64 `json:"time_s"`
	Prefill int     `json:"prefill"`
	Decode  int     `json:"decode"`
	Reason  string  `json:"reason"`
	Held    bool    `json:"held,omitempty"`
	// What the sizing used.
	ObservedRate      float64 `json:"observed_rate"`
	PredictedRate     float64 `json:"predicted_rate"`
	PredictedISL      float64 `json:"predicted_isl"`
	PredictedOSL      float64 `json:"predicted_osl"`
	PrefillCapacity   float64 `json:"prefill_capacity_rps"`
	DecodeCapacity    float64 `json:"decode_capacity_rps"`
	PrefillCorrection float64 `json:"prefill_correction"`
	DecodeCorrection  float64 `json:"decode_correction"`
}

// Planner is the state machine. Create it with New.
type Planner struct {
	cfg              Config
	cap              Capacity
	rate, isl, osl   *series
	corrP, corrD     float64
	history          []Decision // recent sizing targets for stabilisation
	lastUp, lastDown float64
	last             Decision
	seen             bool
}

// New validates the configuration and builds a planner.
func New(cfg Config, c Capacity) (*Planner, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("planner: a capacity model is required")
	}
	p := &Planner{cfg: cfg, cap: c, corrP: 1, corrD: 1, lastUp: math.Inf(-1), lastDown: math.Inf(-1)}
	// The recent range spans two lead times: long enough to hold the load
	// a scale-down would have to carry again.
	window := max(6, int(math.Ceil(2*(1+cfg.StartupDelay/cfg.Interval))))
	for _, s := range []struct {
		dst      **series
		headroom float64
	}{{&p.rate, 2}, {&p.isl, 2}, {&p.osl, 2}} {
		pr, err := NewPredictor(cfg.Predictor, cfg.Window)
		if err != nil {
			return nil, err
		}
		*s.dst = newSeries(pr, window, s.headroom)
	}
	return p, nil
}

// Config returns the configuration with defaults filled in.
func (p *Planner) Config() Config { return p.cfg }

// Tick decides the replica counts after one interval.
func (p *Planner) Tick(o Observation) Decision {
	c := p.cfg
	cur := Decision{Time: o.Time, Prefill: max(o.Prefill, c.MinPrefill, 1), Decode: max(o.Decode, c.MinDecode, 1)}
	if !o.Stale {
		if bad := o.implausible(c); bad != "" {
			// One bad sample must never reach a predictor: hold and say why.
			o.Stale, o.Reason = true, "implausible metrics ("+bad+")"
		}
	}
	if o.Stale || o.Interval <= 0 {
		why := o.Reason
		if why == "" {
			why = "metrics missing or stale"
		}
		if p.seen {
			cur.Prefill, cur.Decode = max(p.last.Prefill, 1), max(p.last.Decode, 1)
		}
		cur.Held, cur.Reason = true, why+": holding the last decision"
		p.last = cur
		return cur
	}
	rate := float64(o.Requests) / o.Interval
	p.rate.observe(rate)
	if o.Requests > 0 {
		p.isl.observe(o.MeanISL)
		p.osl.observe(o.MeanOSL)
	}
	p.correct(o, rate)

	lead := 1 + c.StartupDelay/c.Interval
	d := Decision{Time: o.Time, ObservedRate: rate, PredictedRate: p.rate.predict(lead),
		PredictedISL: math.Max(p.isl.predict(lead), 1), PredictedOSL: math.Max(p.osl.predict(lead), 2),
		PrefillCorrection: p.corrP, DecodeCorrection: p.corrD}
	if !p.isl.seen() {
		d.PredictedISL, d.PredictedOSL = math.Max(o.MeanISL, 1), math.Max(o.MeanOSL, 2)
	}
	// A pool that runs slower than the model by a factor carries that much
	// less. A pool that runs faster is not trusted to carry more: the ratio
	// is learnt at the current request sizes, and a burst of other sizes
	// must not find the pools under-provisioned.
	d.PrefillCapacity = p.cap.PrefillRate(d.PredictedISL, c.TTFTms*c.TTFTTarget, c.TTFTPercentile) / math.Max(p.corrP, 1)
	d.DecodeCapacity = p.cap.DecodeRate(d.PredictedISL, d.PredictedOSL, c.ITLms*c.ITLTarget) / math.Max(p.corrD, 1)
	wantP := need(d.PredictedRate, d.PrefillCapacity, c.MaxPrefill)
	wantD := need(d.PredictedRate, d.DecodeCapacity, c.MaxDecode)
	var why []string
	why = append(why, fmt.Sprintf("predicted %.2f req/s of %.0f/%.0f tokens; capacity per replica prefill %.2f, decode %.2f req/s",
		d.PredictedRate, d.PredictedISL, d.PredictedOSL, d.PrefillCapacity, d.DecodeCapacity))

	// Reactive layer: queues and cache pressure act on what is running now.
	queuePer := p.queuePerEngine(o.QueueDepth, cur.Prefill)
	if queuePer > c.QueueHigh && wantP <= cur.Prefill {
		wantP = cur.Prefill + 1
		why = append(why, fmt.Sprintf("queue %.1f per prefill %s > %g", queuePer, p.engineWord(), c.QueueHigh))
	}
	if o.KVUse > c.KVHigh && wantD <= cur.Decode {
		wantD = cur.Decode + 1
		why = append(why, fmt.Sprintf("KV cache %.0f%% > %.0f%%", o.KVUse*100, c.KVHigh*100))
	}
	// The band's need is a target of the window too: a quiet interval
	// near a replica boundary must not give back what the next noisy one
	// takes again.
	backP, backD := p.needBack(lead)
	p.history = append(p.history, Decision{Time: o.Time, Prefill: max(wantP, backP), Decode: max(wantD, backD)})
	for len(p.history) > 0 && p.history[0].Time <= o.Time-c.Stabilization {
		p.history = p.history[1:]
	}
	d.Prefill = p.settle("prefill", cur.Prefill, wantP, backP, o, queuePer < c.QueueLow, func(x Decision) int { return x.Prefill }, &why)
	d.Decode = p.settle("decode", cur.Decode, wantD, backD, o, o.KVUse < c.KVLow, func(x Decision) int { return x.Decode }, &why)
	d.Prefill, d.Decode = p.limit(d.Prefill, d.Decode, &why)
	if d.Prefill > cur.Prefill || d.Decode > cur.Decode {
		p.lastUp = o.Time
	}
	if d.Prefill < cur.Prefill || d.Decode < cur.Decode {
		p.lastDown = o.Time
	}
	d.Reason = strings.Join(why, "; ")
	p.last, p.seen = d, true
	return d
}

// queuePerEngine is the requests waiting per prefill engine: each of a
// replica's attention-DP ranks takes prompts of its own.
func (p *Planner) queuePerEngine(depth, replicas int) float64 {
	return float64(depth) / float64(max(replicas, 1)*p.cfg.PrefillRanks)
}

// engineWord names what the queue is counted per in reasons.
func (p *Planner) engineWord() string {
	if p.cfg.PrefillRanks > 1 {
		return "rank"
	}
	return "replica"
}

// need is the replicas that carry rate at capacity each (at least one).
func need(rate, capacity float64, most int) int {
	if rate <= 0 {
		return 1
	}
	if capacity <= 0 {
		return most
	}
	return max(1, int(math.Ceil(rate/capacity-1e-9)))
}

// correct updates the latency corrections: observed over expected latency
// at the observed load, smoothed, so a model that is off by a factor is
// pulled back by what the pools really do.
func (p *Planner) correct(o Observation, rate float64) {
	c := p.cfg
	if o.Requests == 0 {
		return
	}
	isl, osl := math.Max(o.MeanISL, 1), math.Max(o.MeanOSL, 2)
	// Latency of an overloaded pool measures its queue, not the model's
	// error: correct only from pools working below their SLO capacity.
	perPrefill := rate / float64(max(o.Prefill, 1))
	calmPrefill := p.queuePerEngine(o.QueueDepth, o.Prefill) <= c.QueueLow &&
		perPrefill <= p.cap.PrefillRate(isl, c.TTFTms*c.TTFTTarget, c.TTFTPercentile)
	// Correct from the statistic the SLO judges when the engines report it.
	ttft, pct := o.TTFTms, 0.0
	if c.TTFTPercentile > 0 && o.TTFTQms > 0 {
		ttft, pct = o.TTFTQms, c.TTFTPercentile
	}
	// A full decode pool makes requests wait for a slot after the
	// hand-off, and that wait is TTFT too: correct prefill only while the
	// decode pool's cache is below its high mark.
	if ttft > 0 && ttft <= c.TTFTms && o.Prefill > 0 && calmPrefill && o.KVUse <= c.KVHigh {
		if exp := p.cap.PrefillTTFT(isl, rate/float64(o.Prefill), pct); exp > 0 && !math.IsInf(exp, 1) {
			p.corrP = clamp((1-c.CorrectionAlpha)*p.corrP+c.CorrectionAlpha*ttft/exp, c.CorrectionMin, c.CorrectionMax)
		}
	}
	if o.ITLms > 0 && o.ITLms <= c.ITLms && o.Decode > 0 && o.KVUse <= c.KVHigh {
		// Requests in decode per replica (Little's law over the decode time).
		batch := rate * (osl - 1) * o.ITLms / 1e3 / float64(o.Decode)
		if exp := p.cap.DecodeITL(isl, osl, math.Max(batch, 1)); exp > 0 {
			p.corrD = clamp((1-c.CorrectionAlpha)*p.corrD+c.CorrectionAlpha*o.ITLms/exp, c.CorrectionMin, c.CorrectionMax)
		}
	}
}

// bandCover is the chance that the load stays inside the band over the
// whole horizon a scale-down must survive.
const bandCover = 0.9

// needBack is the most replicas each pool needs at any step up to one
// start-up delay plus an interval ahead, at the upper band of the rate
// and size forecasts: a replica given back now could not return sooner.
// Each step's band is the one-sided quantile bandCover^(1/steps), so that
// the maximum over the steps, not just one of them, stays inside it with
// probability bandCover (steps taken as independent draws of the noise).
func (p *Planner) needBack(lead float64) (pre, dec int) {
	c := p.cfg
	steps := math.Ceil(lead)
	z := distuv.UnitNormal.Quantile(math.Pow(bandCover, 1/steps))
	for h := 1.0; h <= steps; h++ {
		rate := p.rate.upper(h, z)
		isl := math.Max(p.isl.upper(h, z), 1)
		osl := math.Max(p.osl.upper(h, z), 2)
		pc := p.cap.PrefillRate(isl, c.TTFTms*c.TTFTTarget, c.TTFTPercentile) / math.Max(p.corrP, 1)
		dc := p.cap.DecodeRate(isl, osl, c.ITLms*c.ITLTarget) / math.Max(p.corrD, 1)
		pre, dec = max(pre, need(rate, pc, c.MaxPrefill)), max(dec, need(rate, dc, c.MaxDecode))
	}
	return pre, dec
}

// settle applies hysteresis, stabilisation, the forecast band and the
// cool-down to one pool.
func (p *Planner) settle(name string, cur, want, back int, o Observation, calm bool, get func(Decision) int, why *[]string) int {
	c := p.cfg
	if want >= cur {
		if want > cur {
			*why = append(*why, fmt.Sprintf("%s %d -> %d", name, cur, want))
		}
		return want
	}
	// Down: the largest target (point or band) of the stabilisation window, only when calm and cooled down.
	stable := want
	for _, h := range p.history {
		stable = max(stable, get(h))
	}
	switch {
	case stable >= cur:
		return cur
	case back >= cur:
		*why = append(*why, fmt.Sprintf("%s stays %d: the forecast's upper band needs it within the start-up delay", name, cur))
		return cur
	case !calm:
		*why = append(*why, fmt.Sprintf("%s stays %d: pressure above the low-water mark", name, cur))
		return cur
	case o.Time-p.lastUp < c.Cooldown || o.Time-p.lastDown < c.Cooldown:
		*why = append(*why, fmt.Sprintf("%s stays %d: cool-down", name, cur))
		return cur
	}
	stable = max(stable, back)
	*why = append(*why, fmt.Sprintf("%s %d -> %d", name, cur, stable))
	return stable
}

// limit clamps to the per-pool bounds and the GPU budget: prefill shrinks
// first, and each pool keeps at least one replica.
func (p *Planner) limit(pre, dec int, why *[]string) (int, int) {
	c := p.cfg
	pre = min(max(pre, c.MinPrefill, 1), c.MaxPrefill)
	dec = min(max(dec, c.MinDecode, 1), c.MaxDecode)
	if c.GPUBudget > 0 {
		over := func() bool { return pre*c.PrefillGPUs+dec*c.DecodeGPUs > c.GPUBudget }
		shrunk := false
		// Prefill gives way first, but neither pool below what runs now
		// until both are there; then down to one replica each.
		for _, floor := range []struct{ p, d int }{{max(p.last.Prefill, 1), max(p.last.Decode, 1)}, {1, 1}} {
			for over() && pre > floor.p {
				pre, shrunk = pre-1, true
			}
			for over() && dec > floor.d {
				dec, shrunk = dec-1, true
			}
		}
		if shrunk {
			*why = append(*why, fmt.Sprintf("GPU budget %d caps it at %d prefill + %d decode", c.GPUBudget, pre, dec))
		}
	}
	return pre, dec
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

// implausible names the first value no engine can report: not finite,
// negative, a cache use outside 0..1, or a request rate beyond what any
// deployment of MaxPrefill replicas serves (1,000 req/s a replica).
func (o Observation) implausible(c Config) string {
	for _, f := range []struct {
		name string
		v    float64
	}{{"interval", o.Interval}, {"mean ISL", o.MeanISL}, {"mean OSL", o.MeanOSL}, {"TTFT", o.TTFTms}, {"ITL", o.ITLms},
		{"TTFT at the percentile", o.TTFTQms}, {"ITL at the percentile", o.ITLQms}, {"KV use", o.KVUse}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Sprintf("%s %g", f.name, f.v)
		}
	}
	switch {
	case o.Requests < 0:
		return fmt.Sprintf("requests %d", o.Requests)
	case o.QueueDepth < 0:
		return fmt.Sprintf("queue depth %d", o.QueueDepth)
	case o.KVUse > 1.0001:
		return fmt.Sprintf("KV use %g above 1", o.KVUse)
	case o.Interval > 0 && float64(o.Requests)/o.Interval > 1000*float64(max(c.MaxPrefill, 1)):
		return fmt.Sprintf("%.3g req/s", float64(o.Requests)/o.Interval)
	case o.Requests > 0 && (o.MeanISL < 1 || o.MeanISL > 1e7 || o.MeanOSL > 1e7):
		return fmt.Sprintf("mean sizes %g/%g tokens", o.MeanISL, o.MeanOSL)
	}
	return ""
}
