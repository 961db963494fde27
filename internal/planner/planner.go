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
)

// Capacity is what the planner needs to know about one prefill and one
// decode replica (implemented by internal/capacity on the performance model).
type Capacity interface {
	// PrefillTTFT is the mean TTFT in ms of a prefill replica taking rate
	// req/s of isl-token prompts (+Inf past saturation).
	PrefillTTFT(isl, rate float64) float64
	// PrefillRate is the most req/s a prefill replica takes inside ttftMs.
	PrefillRate(isl, ttftMs float64) float64
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
	rate, isl, osl   Predictor
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
	var err error
	for _, pr := range []*Predictor{&p.rate, &p.isl, &p.osl} {
		if *pr, err = NewPredictor(cfg.Predictor, cfg.Window); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Config returns the configuration with defaults filled in.
func (p *Planner) Config() Config { return p.cfg }

// Tick decides the replica counts after one interval.
func (p *Planner) Tick(o Observation) Decision {
	c := p.cfg
	cur := Decision{Time: o.Time, Prefill: max(o.Prefill, c.MinPrefill, 1), Decode: max(o.Decode, c.MinDecode, 1)}
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
	p.rate.Observe(rate)
	if o.Requests > 0 {
		p.isl.Observe(o.MeanISL)
		p.osl.Observe(o.MeanOSL)
	}
	p.correct(o, rate)

	lead := 1 + c.StartupDelay/c.Interval
	d := Decision{Time: o.Time, ObservedRate: rate, PredictedRate: p.rate.Predict(lead),
		PredictedISL: math.Max(p.isl.Predict(lead), 1), PredictedOSL: math.Max(p.osl.Predict(lead), 2),
		PrefillCorrection: p.corrP, DecodeCorrection: p.corrD}
	if !p.seen || o.Requests > 0 && p.isl.Predict(lead) == 0 {
		d.PredictedISL, d.PredictedOSL = math.Max(o.MeanISL, 1), math.Max(o.MeanOSL, 2)
	}
	// A pool that runs slower than the model by a factor carries that much
	// less. A pool that runs faster is not trusted to carry more: the ratio
	// is learnt at the current request sizes, and a burst of other sizes
	// must not find the pools under-provisioned.
	d.PrefillCapacity = p.cap.PrefillRate(d.PredictedISL, c.TTFTms*c.TTFTTarget) / math.Max(p.corrP, 1)
	d.DecodeCapacity = p.cap.DecodeRate(d.PredictedISL, d.PredictedOSL, c.ITLms*c.ITLTarget) / math.Max(p.corrD, 1)
	wantP := need(d.PredictedRate, d.PrefillCapacity, c.MaxPrefill)
	wantD := need(d.PredictedRate, d.DecodeCapacity, c.MaxDecode)
	var why []string
	why = append(why, fmt.Sprintf("predicted %.2f req/s of %.0f/%.0f tokens; capacity per replica prefill %.2f, decode %.2f req/s",
		d.PredictedRate, d.PredictedISL, d.PredictedOSL, d.PrefillCapacity, d.DecodeCapacity))

	// Reactive layer: queues and cache pressure act on what is running now.
	queuePer := float64(o.QueueDepth) / float64(cur.Prefill)
	if queuePer > c.QueueHigh && wantP <= cur.Prefill {
		wantP = cur.Prefill + 1
		why = append(why, fmt.Sprintf("queue %.1f per prefill replica > %g", queuePer, c.QueueHigh))
	}
	if o.KVUse > c.KVHigh && wantD <= cur.Decode {
		wantD = cur.Decode + 1
		why = append(why, fmt.Sprintf("KV cache %.0f%% > %.0f%%", o.KVUse*100, c.KVHigh*100))
	}
	p.history = append(p.history, Decision{Time: o.Time, Prefill: wantP, Decode: wantD})
	for len(p.history) > 0 && p.history[0].Time <= o.Time-c.Stabilization {
		p.history = p.history[1:]
	}
	d.Prefill = p.settle("prefill", cur.Prefill, wantP, o, queuePer < c.QueueLow, func(x Decision) int { return x.Prefill }, &why)
	d.Decode = p.settle("decode", cur.Decode, wantD, o, o.KVUse < c.KVLow, func(x Decision) int { return x.Decode }, &why)
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
	calmPrefill := float64(o.QueueDepth)/float64(max(o.Prefill, 1)) <= c.QueueLow &&
		perPrefill <= p.cap.PrefillRate(isl, c.TTFTms*c.TTFTTarget)
	if o.TTFTms > 0 && o.TTFTms <= c.TTFTms && o.Prefill > 0 && calmPrefill {
		if exp := p.cap.PrefillTTFT(isl, rate/float64(o.Prefill)); exp > 0 && !math.IsInf(exp, 1) {
			p.corrP = clamp((1-c.CorrectionAlpha)*p.corrP+c.CorrectionAlpha*o.TTFTms/exp, c.CorrectionMin, c.CorrectionMax)
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

// settle applies hysteresis, stabilisation and the cool-down to one pool.
func (p *Planner) settle(name string, cur, want int, o Observation, calm bool, get func(Decision) int, why *[]string) int {
	c := p.cfg
	if want >= cur {
		if want > cur {
			*why = append(*why, fmt.Sprintf("%s %d -> %d", name, cur, want))
		}
		return want
	}
	// Down: the largest target of the stabilisation window, only when calm and cooled down.
	stable := want
	for _, h := range p.history {
		stable = max(stable, get(h))
	}
	switch {
	case stable >= cur:
		return cur
	case !calm:
		*why = append(*why, fmt.Sprintf("%s stays %d: pressure above the low-water mark", name, cur))
		return cur
	case o.Time-p.lastUp < c.Cooldown || o.Time-p.lastDown < c.Cooldown:
		*why = append(*why, fmt.Sprintf("%s stays %d: cool-down", name, cur))
		return cur
	}
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
