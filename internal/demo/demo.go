// Package demo runs the planner reference scenario three ways — with the
// planner, statically provisioned at the planner's peak, and statically at
// the base — and measures SLO attainment before the burst, after the
// planner's reaction window and overall, and GPU-hours. It is pure.
package demo

import (
	"fmt"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/plansim"
	"github.com/gpuplane/gpuplane/internal/scenario"
	"github.com/gpuplane/gpuplane/internal/sim"
)

// Run is one way of provisioning the scenario.
type Run struct {
	Name      string             `json:"name"`
	Prefill   int                `json:"prefill,omitempty"`
	Decode    int                `json:"decode,omitempty"`
	Summary   *sim.Summary       `json:"summary"`
	Decisions []planner.Decision `json:"decisions,omitempty"`
	// Attainment of requests arriving before the burst, and from the end
	// of the reaction window on.
	Before float64 `json:"attainment_before_burst"`
	After  float64 `json:"attainment_after_reaction"`
}

// Result compares the three runs.
type Result struct {
	Planned    Run `json:"planned"`
	StaticPeak Run `json:"static_peak"`
	StaticBase Run `json:"static_base"`
	// ReactionEnd is burst start + one planner interval + start-up delay:
	// the planner sees the burst within an interval, and the workers it
	// adds then serve one start-up delay later.
	BurstStart  float64 `json:"burst_start_s"`
	ReactionEnd float64 `json:"reaction_end_s"`
	PeakPrefill int     `json:"peak_prefill"`
	PeakDecode  int     `json:"peak_decode"`
}

// Execute runs the scenario, which needs a planner section and a burst.
func Execute(sc *scenario.Scenario, cat *catalog.Catalog, params *perf.Params) (*Result, error) {
	if sc.Planner == nil || sc.Workload.Burst == nil {
		return nil, fmt.Errorf("demo scenario: needs a planner section and workload.burst")
	}
	interval := sc.Planner.Interval
	if interval == 0 {
		interval = 30
	}
	res := &Result{BurstStart: sc.Workload.Burst.StartSeconds}
	res.ReactionEnd = res.BurstStart + sc.Deployment.StartupDelaySeconds + interval
	var err error
	if res.Planned, err = res.run("planner", sc, cat, params, 0, 0); err != nil {
		return nil, err
	}
	for _, d := range res.Planned.Decisions {
		res.PeakPrefill, res.PeakDecode = max(res.PeakPrefill, d.Prefill), max(res.PeakDecode, d.Decode)
	}
	if res.StaticPeak, err = res.run("static at peak", sc, cat, params, res.PeakPrefill, res.PeakDecode); err != nil {
		return nil, err
	}
	base := sc.Deployment
	if res.StaticBase, err = res.run("static at base", sc, cat, params, base.Prefill.Replicas, base.Decode.Replicas); err != nil {
		return nil, err
	}
	return res, nil
}

// run simulates one provisioning; prefill = 0 means the planner's.
func (res *Result) run(name string, sc *scenario.Scenario, cat *catalog.Catalog, params *perf.Params, prefill, decode int) (Run, error) {
	s := *sc
	dep := s.Deployment
	pre, dec := *dep.Prefill, *dep.Decode
	dep.Prefill, dep.Decode = &pre, &dec
	s.Deployment = dep
	if prefill > 0 {
		s.Planner = nil
		pre.Replicas, dec.Replicas = prefill, decode
	}
	var before, beforeMet, after, afterMet int
	onReq := func(r sim.Record) {
		met := r.TTFTms <= s.SLO.TTFTMs && r.ITLms <= s.SLO.ITLMs
		switch {
		case r.ArrivalS < res.BurstStart:
			before++
			if met {
				beforeMet++
			}
		case r.ArrivalS >= res.ReactionEnd:
			after++
			if met {
				afterMet++
			}
		}
	}
	sm, p, err := scenario.BuildPlanned(&s, cat, params, onReq)
	if err != nil {
		return Run{}, err
	}
	out := Run{Name: name, Prefill: prefill, Decode: decode}
	if p != nil {
		out.Decisions, out.Summary, err = plansim.Run(sm, p)
	} else {
		out.Summary, err = sm.Run()
	}
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", name, err)
	}
	out.Before, out.After = ratio(beforeMet, before), ratio(afterMet, after)
	return out, nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}
