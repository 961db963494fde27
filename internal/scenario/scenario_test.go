package scenario

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/plansim"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
	"github.com/gpuplane/gpuplane/internal/sim"
)

// load writes body to a file and loads it as a scenario.
func load(t *testing.T, body string) (*Scenario, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(f)
}

func build(t *testing.T, body string) (*Scenario, error) {
	t.Helper()
	s, err := load(t, body)
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

// Pools of attention-DP workers simulate, aggregated and disaggregated,
// with and without the planner, and are billed for every rank's GPUs;
// bad ranks name their field.
func TestAttentionDPScenario(t *testing.T) {
	const head = `
model: deepseek-ai/DeepSeek-R1
gpu: b200_sxm
precision: fp4
backend: trtllm
workload: {kind: poisson, rate: {constant: 2}, isl: {fixed: 1000}, osl: {fixed: 100}}
slo: {ttftMs: 2000, itlMs: 100}
durationSeconds: 60
`
	// run simulates body, under its planner when it has one.
	run := func(body string) (*sim.Summary, []planner.Decision, error) {
		t.Helper()
		s, err := load(t, body)
		if err != nil {
			return nil, nil, err
		}
		sm, p, err := BuildPlanned(s, catalog.MustDefault(), perf.MustDefaultParams(), nil)
		if err != nil || p == nil {
			if err != nil {
				return nil, nil, err
			}
			sum, err := sm.Run()
			return sum, nil, err
		}
		if want := s.Deployment.Prefill.DP; p.Config().PrefillRanks != max(want, 1) {
			t.Errorf("the planner counts queues over %d ranks a prefill replica, the pool has dp %d", p.Config().PrefillRanks, want)
		}
		decisions, sum, err := plansim.Run(sm, p)
		return sum, decisions, err
	}
	for _, tc := range []struct {
		deployment string
		gpus       int
	}{
		{"deployment: {mode: agg, agg: {tp: 1, ep: 8, dp: 8, replicas: 1}}", 8},
		{"deployment: {mode: disagg, prefill: {tp: 1, ep: 4, dp: 4, replicas: 1}, decode: {tp: 1, ep: 8, dp: 8, replicas: 1}}", 12},
		// The planner holds one replica of each at this light load.
		{"deployment: {mode: disagg, prefill: {tp: 1, ep: 4, dp: 4, replicas: 1}, decode: {tp: 1, ep: 8, dp: 8, replicas: 1}}\nplanner: {intervalSeconds: 10, gpuBudget: 64}", 12},
	} {
		sum, decisions, err := run(head + tc.deployment)
		if err != nil {
			t.Fatalf("%s: %v", tc.deployment, err)
		}
		if strings.Contains(tc.deployment, "planner") && len(decisions) == 0 {
			t.Errorf("%s: the planner made no decisions", tc.deployment)
		}
		if sum.Requests == 0 || sum.Completed != sum.Requests {
			t.Errorf("%s: completed %d of %d", tc.deployment, sum.Completed, sum.Requests)
		}
		if want := float64(tc.gpus) * sum.SimSeconds / 3600; math.Abs(sum.GPUHours-want) > 1e-9*want {
			t.Errorf("%s: %.4f GPU-hours, want %.4f (%d GPUs)", tc.deployment, sum.GPUHours, want, tc.gpus)
		}
	}
	for _, tc := range []struct{ deployment, want string }{
		{"deployment: {mode: agg, agg: {tp: 1, ep: 7, dp: 8, replicas: 1}}", "deployment.agg: ep: 7"},
		{"deployment: {mode: agg, agg: {tp: 1, ep: 8, dp: 0.5, replicas: 1}}", "dp"},
		{"deployment: {mode: agg, agg: {tp: 1, ep: 8, dp: 2048, replicas: 1}}", "deployment.agg: dp: 2048"},
	} {
		if _, _, err := run(head + tc.deployment); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", tc.deployment, err, tc.want)
		}
	}
}
