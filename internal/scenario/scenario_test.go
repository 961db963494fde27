package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

func build(t *testing.T, body string) (*Scenario, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(f)
	if err != nil {
		return nil, err
	}
	sim, err := Build(s, catalog.MustDefault(), perf.MustDefaultParams(), nil)
	if err != nil {
		return nil, err
	}
	sum, err := sim.Run()
	if err != nil {
		return nil, err
	}
	if sum.Requests == 0 || sum.Completed != sum.Requests {
		t.Fatalf("completed %d of %d", sum.Completed, sum.Requests)
	}
	return s, nil
}

func TestUsersScenario(t *testing.T) {
	if _, err := build(t, `
model: Qwen/Qwen3-8B
gpu: a10
slice: "1/2"
precision: bf16
deployment: {mode: agg, agg: {replicas: 2}}
workload: {kind: users, users: {count: 4, thinkMs: 500}, isl: {fixed: 500}, osl: {normal: {mean: 100, std: 20}}}
slo: {ttftMs: 2000, itlMs: 100}
durationSeconds: 60
`); err == nil || !strings.Contains(err.Error(), "deployment.agg") || !strings.Contains(err.Error(), "does not fit") {
		// Qwen3-8B's 16 GB of bf16 weights do not fit a 12 GiB A10 half.
		t.Fatalf("want a fit error naming deployment.agg, got %v", err)
	}
	if _, err := build(t, `
model: Qwen/Qwen3-8B
gpu: h100_sxm
slice: 3g.40gb
precision: fp8
deployment: {mode: agg, agg: {replicas: 2}}
workload: {kind: users, users: {count: 4, thinkMs: 500, rampSeconds: 2}, isl: {fixed: 500}, osl: {normal: {mean: 100, std: 20}}}
slo: {ttftMs: 2000, itlMs: 100}
durationSeconds: 60
`); err != nil {
		t.Fatal(err)
	}
}

func TestTraceScenario(t *testing.T) {
	trace := sharedtest.Path(t, "traces", "azure_llm_2023_conv.csv")
	if _, err := build(t, `
model: Qwen/Qwen3-32B
gpu: h200_sxm
precision: fp8
deployment: {mode: disagg, prefill: {tp: 1, replicas: 2}, decode: {tp: 2, replicas: 1}}
workload: {kind: trace, trace: {file: `+trace+`, format: azure}}
slo: {ttftMs: 500, itlMs: 30}
durationSeconds: 120
`); err != nil {
		t.Fatal(err)
	}
}
