package plansim_test

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/plansim"
	"github.com/gpuplane/gpuplane/internal/scenario"
	"github.com/gpuplane/gpuplane/internal/sim"
)

type outcome struct {
	decisions     []planner.Decision
	sum           *sim.Summary
	before, after float64 // attainment of requests arriving before the burst, and after the reaction window
}

func runBurst(t testing.TB, static *[2]int) outcome {
	t.Helper()
	sc, err := scenario.Load("../../examples/planner-burst.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var before, beforeMet, after, afterMet int
	burst := sc.Workload.Burst.StartSeconds
	// The planner sees the burst within one interval and new workers serve
	// one start-up delay later; allow one more interval for the queue to drain.
	window := burst + sc.Deployment.StartupDelaySeconds + 2*sc.Planner.Interval
	if static != nil {
		sc.Planner = nil
		sc.Deployment.Prefill.Replicas, sc.Deployment.Decode.Replicas = static[0], static[1]
	}
	onReq := func(r sim.Record) {
		met := r.TTFTms <= sc.SLO.TTFTMs && r.ITLms <= sc.SLO.ITLMs
		switch {
		case r.ArrivalS < burst:
			before++
			if met {
				beforeMet++
			}
		case r.ArrivalS >= window:
			after++
			if met {
				afterMet++
			}
		}
	}
	s, p, err := scenario.BuildPlanned(sc, catalog.MustDefault(), perf.MustDefaultParams(), onReq)
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	if p == nil {
		o.sum, err = s.Run()
	} else {
		o.decisions, o.sum, err = plansim.Run(s, p)
	}
	if err != nil {
		t.Fatal(err)
	}
	o.before, o.after = float64(beforeMet)/float64(before), float64(afterMet)/float64(after)
	return o
}

// The reference scenario: 1 prefill + 1 decode on normal traffic, a burst
// of 200 users with long prompts, calm again. The planner scales prefill
// up in time, holds the SLO outside the reaction window, and returns to 1 + 1.
func TestPlannerHoldsSLOThroughBurst(t *testing.T) {
	o := runBurst(t, nil)
	peakP, peakD := 0, 0
	for _, d := range o.decisions {
		peakP, peakD = max(peakP, d.Prefill), max(peakD, d.Decode)
	}
	last := o.decisions[len(o.decisions)-1]
	t.Logf("peak %d prefill + %d decode; end %d + %d; attainment before %.4f after window %.4f overall %.4f; %.2f GPU-hours",
		peakP, peakD, last.Prefill, last.Decode, o.before, o.after, o.sum.SLOAttainment, o.sum.GPUHours)
	if peakP < 2 {
		t.Errorf("the burst of long prompts needs more prefill; peak was %d", peakP)
	}
	if last.Prefill != 1 || last.Decode != 1 {
		t.Errorf("after the burst the pools should return to 1 + 1, got %d + %d", last.Prefill, last.Decode)
	}
	if o.before < 0.99 || o.after < 0.99 {
		t.Errorf("SLO attainment before the burst %.4f, after the reaction window %.4f; want >= 0.99", o.before, o.after)
	}
	base := runBurst(t, &[2]int{1, 1})
	peak := runBurst(t, &[2]int{peakP, peakD})
	t.Logf("static base: attainment %.4f, %.2f GPU-hours; static peak: %.4f, %.2f GPU-hours",
		base.sum.SLOAttainment, base.sum.GPUHours, peak.sum.SLOAttainment, peak.sum.GPUHours)
	if base.sum.SLOAttainment >= o.sum.SLOAttainment {
		t.Errorf("static 1 + 1 attains %.4f, not below the planner's %.4f", base.sum.SLOAttainment, o.sum.SLOAttainment)
	}
	if peak.sum.GPUHours <= o.sum.GPUHours {
		t.Errorf("static peak uses %.2f GPU-hours, not more than the planner's %.2f", peak.sum.GPUHours, o.sum.GPUHours)
	}
}

// BenchmarkBurstScenario simulates the reference scenario end to end with the planner.
func BenchmarkBurstScenario(b *testing.B) {
	for b.Loop() {
		runBurst(b, nil)
	}
}
