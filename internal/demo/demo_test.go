package demo

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/examples"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/scenario"
)

func reference(t testing.TB) *Result {
	t.Helper()
	var sc scenario.Scenario
	if err := yaml.UnmarshalStrict(examples.PlannerBurst, &sc); err != nil {
		t.Fatal(err)
	}
	res, err := Execute(&sc, catalog.MustDefault(), perf.MustDefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The reference scenario: 1 prefill + 1 decode on normal traffic, a burst
// of 200 users with long prompts, calm again. The planner scales prefill
// up in time, holds the SLO outside the reaction window, returns to 1 + 1,
// and beats both static provisionings on their weak side.
func TestPlannerHoldsSLOThroughBurst(t *testing.T) {
	res := reference(t)
	p := res.Planned
	last := p.Decisions[len(p.Decisions)-1]
	t.Logf("peak %d prefill + %d decode; end %d + %d; attainment before %.4f after %.4f overall %.4f; %.2f GPU-hours",
		res.PeakPrefill, res.PeakDecode, last.Prefill, last.Decode, p.Before, p.After, p.Summary.SLOAttainment, p.Summary.GPUHours)
	t.Logf("static base %.4f on %.2f GPU-hours; static peak %.4f on %.2f", res.StaticBase.Summary.SLOAttainment,
		res.StaticBase.Summary.GPUHours, res.StaticPeak.Summary.SLOAttainment, res.StaticPeak.Summary.GPUHours)
	if res.PeakPrefill < 2 {
		t.Errorf("the burst of long prompts needs more prefill; peak was %d", res.PeakPrefill)
	}
	if last.Prefill != 1 || last.Decode != 1 {
		t.Errorf("after the burst the pools should return to 1 + 1, got %d + %d", last.Prefill, last.Decode)
	}
	if p.Before < 0.99 || p.After < 0.99 {
		t.Errorf("SLO attainment before the burst %.4f, after the reaction window %.4f; want >= 0.99", p.Before, p.After)
	}
	if res.StaticBase.After >= p.After || res.StaticBase.Summary.SLOAttainment >= p.Summary.SLOAttainment {
		t.Errorf("static 1 + 1 attains %.4f, not below the planner's %.4f", res.StaticBase.Summary.SLOAttainment, p.Summary.SLOAttainment)
	}
	if res.StaticPeak.Summary.GPUHours <= p.Summary.GPUHours {
		t.Errorf("static peak uses %.2f GPU-hours, not more than the planner's %.2f", res.StaticPeak.Summary.GPUHours, p.Summary.GPUHours)
	}
}

// BenchmarkDemo simulates the reference scenario three ways, as `gpuplane demo` does.
func BenchmarkDemo(b *testing.B) {
	for b.Loop() {
		reference(b)
	}
}
