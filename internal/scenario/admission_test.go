package scenario

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/sim"
)

// kvAdmission sets how every pool admits requests: TensorRT-LLM reserves
// whole requests by default, so users of long answers queue for a slot;
// on-demand admits them all and decodes a larger batch. A value it does not
// know is an error naming the field.
func TestKVAdmissionScenario(t *testing.T) {
	const body = `
model: meta-llama/Llama-3.1-70B
gpu: h200_sxm
precision: fp8
backend: trtllm
ADMISSION
deployment: {mode: agg, agg: {tp: 1, replicas: 1}}
workload: {kind: users, users: {count: 64}, isl: {fixed: 1024}, osl: {fixed: 8192}}
slo: {ttftMs: 2000, itlMs: 100}
durationSeconds: 1200
`
	run := func(adm string) *sim.Summary {
		t.Helper()
		s, err := load(t, strings.Replace(body, "ADMISSION", adm, 1))
		if err != nil {
			t.Fatal(err)
		}
		sm, err := Build(s, catalog.MustDefault(), perf.MustDefaultParams(), nil)
		if err != nil {
			t.Fatalf("%q: %v", adm, err)
		}
		sum, err := sm.Run()
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	def, whole, onDemand := run(""), run("kvAdmission: whole"), run("kvAdmission: on-demand")
	t.Logf("whole: TTFT %.0f ms, ITL %.2f ms; on-demand: %.0f ms, %.2f ms", whole.TTFTMeanms, whole.ITLMeanms, onDemand.TTFTMeanms, onDemand.ITLMeanms)
	if def.TTFTMeanms != whole.TTFTMeanms || def.ITLMeanms != whole.ITLMeanms {
		t.Errorf("trtllm's default: TTFT %.0f ms, ITL %.2f ms; whole: %.0f ms, %.2f ms; want the same", def.TTFTMeanms, def.ITLMeanms, whole.TTFTMeanms, whole.ITLMeanms)
	}
	if whole.TTFTMeanms < 5*onDemand.TTFTMeanms || whole.ITLMeanms >= onDemand.ITLMeanms {
		t.Errorf("whole: TTFT %.0f ms, ITL %.2f ms; on-demand: %.0f ms, %.2f ms; want users queueing for whole requests and a smaller batch",
			whole.TTFTMeanms, whole.ITLMeanms, onDemand.TTFTMeanms, onDemand.ITLMeanms)
	}
	s, err := load(t, strings.Replace(body, "ADMISSION", "kvAdmission: lazy", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(s, catalog.MustDefault(), perf.MustDefaultParams(), nil); err == nil || !strings.Contains(err.Error(), `kvAdmission: "lazy" is not a KV admission`) {
		t.Errorf("kvAdmission lazy: %v", err)
	}
}
