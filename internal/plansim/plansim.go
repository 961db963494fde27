// Package plansim runs the planner's decision core inside the simulator:
// every adjustment interval it observes the interval that just ended, asks
// the planner, and scales the simulated pools (new workers serve after the
// pool's start-up delay). It is pure.
package plansim

import (
	"fmt"

	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/sim"
)

// Pool names the driver scales.
const (
	PrefillPool = "prefill"
	DecodePool  = "decode"
)

// Run drives s with p until the workload is served, and returns the
// planner's decisions and the run's summary.
func Run(s *sim.Sim, p *planner.Planner) ([]planner.Decision, *sim.Summary, error) {
	interval := p.Config().Interval
	var decisions []planner.Decision
	seen := 0
	for t := interval; ; t += interval {
		more, err := s.Step(t)
		if err != nil {
			return nil, nil, err
		}
		pts := s.PointsSince(seen)
		seen += len(pts)
		cfg := p.Config()
		obs := Observe(pts, t, interval, s.Replicas(PrefillPool), s.Replicas(DecodePool), cfg.TTFTPercentile, cfg.ITLPercentile)
		d := p.Tick(obs)
		decisions = append(decisions, d)
		if err := s.Scale(PrefillPool, d.Prefill, t); err != nil {
			return nil, nil, fmt.Errorf("planner at %.0f s: %w", t, err)
		}
		if err := s.Scale(DecodePool, d.Decode, t); err != nil {
			return nil, nil, fmt.Errorf("planner at %.0f s: %w", t, err)
		}
		if !more || s.Drained() {
			break
		}
	}
	return decisions, s.Summary(), nil
}

// Observe folds the simulator's closed intervals since the last tick into
// one observation, the way live metrics are read over the interval.
// ttftPct and itlPct (0: none) are the SLO's percentiles: the observation
// carries the completions-weighted mean of the intervals' values at them.
func Observe(pts []sim.Point, now, interval float64, prefill, decode int, ttftPct, itlPct float64) planner.Observation {
	o := planner.Observation{Time: now, Interval: interval, Prefill: prefill, Decode: decode}
	if len(pts) == 0 {
		o.Stale, o.Reason = true, "no interval closed since the last tick"
		return o
	}
	var isl, osl, ttft, itl, ttftQ, itlQ float64
	completions, itlN := 0, 0
	for _, p := range pts {
		ttftQ += p.TTFTms.At(ttftPct) * float64(p.Completions)
		if p.ITLMeanms > 0 {
			itlQ += p.ITLms.At(itlPct) * float64(p.Completions)
		}
		o.Requests += p.Arrivals
		isl += p.ISLMean * float64(p.Arrivals)
		osl += p.OSLMean * float64(p.Arrivals)
		ttft += p.TTFTMeanms * float64(p.Completions)
		completions += p.Completions
		if p.ITLMeanms > 0 {
			itl += p.ITLMeanms * float64(p.Completions)
			itlN += p.Completions
		}
	}
	last := pts[len(pts)-1]
	// Requests still waiting for their first token: the prefill pool's in-flight ones.
	o.QueueDepth = last.PoolInFlight[PrefillPool]
	o.KVUse = last.PoolKVUse[DecodePool]
	if o.Requests > 0 {
		o.MeanISL, o.MeanOSL = isl/float64(o.Requests), osl/float64(o.Requests)
	}
	if completions > 0 {
		o.TTFTms = ttft / float64(completions)
		if ttftPct > 0 {
			o.TTFTQms = ttftQ / float64(completions)
		}
	}
	if itlN > 0 {
		o.ITLms = itl / float64(itlN)
		if itlPct > 0 {
			o.ITLQms = itlQ / float64(itlN)
		}
	}
	return o
}
