package scenario

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// A scenario's specTokens and specAccept reach the simulated engines: the
// same users see a shorter ITL. A half-given setting is refused by name.
func TestSpeculativeScenario(t *testing.T) {
	const body = `
model: Qwen/Qwen3-8B
gpu: h100_sxm
precision: fp8
SPEC
deployment: {mode: disagg, prefill: {replicas: 1}, decode: {replicas: 1}}
workload: {kind: users, users: {count: 4, thinkMs: 200}, isl: {fixed: 1000}, osl: {fixed: 200}}
slo: {ttftMs: 2000, itlMs: 100}
durationSeconds: 30
`
	itl := func(spec string) float64 {
		s, err := load(t, strings.Replace(body, "SPEC", spec, 1))
		if err != nil {
			t.Fatal(err)
		}
		sm, err := Build(s, catalog.MustDefault(), perf.MustDefaultParams(), nil)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := sm.Run()
		if err != nil {
			t.Fatal(err)
		}
		return sum.ITLMeanms
	}
	plain, spec := itl(""), itl("specTokens: 2\nspecAccept: 2.2")
	if r := plain / spec; r < 1.6 || r > 2.2 {
		t.Errorf("mean ITL %.2f ms plain, %.2f ms speculative: %.2fx, want 1.6-2.2x at 2.2 tokens a step", plain, spec, r)
	}
	s, err := load(t, strings.Replace(body, "SPEC", "specTokens: 2", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(s, catalog.MustDefault(), perf.MustDefaultParams(), nil); err == nil || !strings.Contains(err.Error(), "specTokens/specAccept: spec_accept: required") {
		t.Errorf("specTokens without specAccept: %v", err)
	}
}
