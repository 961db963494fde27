package estimate

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/serving"
)

// kv_admission overrides the backend's own admission: TensorRT-LLM's
// default is whole, and on-demand gives it vLLM's eviction; a name it does
// not know is an error naming the field and both values.
func TestKVAdmission(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.Backend, q.Precision, q.TP, q.ISL, q.OSL, q.Concurrency, q.Harness =
		"meta-llama/Llama-3.1-70B", "h200_sxm", "trtllm", "fp8", 1, 1024, 8192, 64, "burst"
	run := func(adm string) *Output {
		t.Helper()
		q := q
		q.KVAdmission = adm
		out, err := Run(env(), q, serving.Options{})
		if err != nil {
			t.Fatalf("kv_admission %q: %v", adm, err)
		}
		return out
	}
	def, whole, onDemand := run(""), run("whole"), run("on-demand")
	if def.TTFTms != whole.TTFTms || def.TPOTms != whole.TPOTms {
		t.Errorf("trtllm's default: TTFT %.0f ms, TPOT %.2f ms; whole: %.0f ms, %.2f ms; want the same", def.TTFTms, def.TPOTms, whole.TTFTms, whole.TPOTms)
	}
	if onDemand.TTFTms*5 > whole.TTFTms || onDemand.TPOTms <= whole.TPOTms {
		t.Errorf("on-demand: TTFT %.0f ms, TPOT %.2f ms; whole: %.0f ms, %.2f ms; want far less waiting and a larger batch", onDemand.TTFTms, onDemand.TPOTms, whole.TTFTms, whole.TPOTms)
	}
	q.Backend = "vllm"
	if n := strings.Join(run("whole").Notes, "\n"); !strings.Contains(n, "whole length, set aside at admission") {
		t.Errorf("vllm with kv_admission whole: notes %q; want the queue counted at the whole length", n)
	}
	q.KVAdmission = "fifo"
	_, err := Run(env(), q, serving.Options{})
	if err == nil || !strings.Contains(err.Error(), "kv_admission") || !strings.Contains(err.Error(), `"fifo"`) ||
		!strings.Contains(err.Error(), "whole") || !strings.Contains(err.Error(), "on-demand") {
		t.Errorf("kv_admission fifo: error %v; want one naming the field, the value and both choices", err)
	}
}
