package manifest

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/configure"
)

// An attention-DP worker (8 ranks of one GPU, experts over all 8, 2,050
// requests in flight) is started with each engine's own flags: vLLM counts
// ranks and a rank's batch (257), SGLang counts every GPU in --tp, the
// ranks in --dp and whole ranks' requests (8 x 257), and
// TensorRT-LLM counts every GPU in tp_size and turns on attention DP in
// its options file; the emulated engine takes estimate's flags. What a
// manifest cannot express is an error.
func TestAttentionDPEngineArgs(t *testing.T) {
	c := configure.Config{Mode: "agg", Agg: &configure.Pool{Role: "agg", Device: "b200_sxm", TP: 1, EP: 8, DP: 8,
		Workers: 1, GPUsPerWorker: 8, Batch: 2050}}
	for _, tc := range []struct {
		backend string
		want    []string
	}{
		{"vllm", []string{"--tensor-parallel-size 1 ", "--max-num-seqs 257 ", "--data-parallel-size 8 ", "--enable-expert-parallel"}},
		{"sglang", []string{"--tp 8 ", "--max-running-requests 2056 ", "--dp 8 --enable-dp-attention ", "--ep-size 8"}},
		{"trtllm", []string{"--tp_size 8 ", "--max_batch_size 257 ", "--ep_size 8 ", "--extra_llm_api_options /etc/gpuplane/llm-api-options.yaml",
			"enable_attention_dp: true"}},
	} {
		o := opts(tc.backend, DriverGPUPlane)
		o.Model = "deepseek-ai/DeepSeek-R1"
		out, err := Kubernetes(c, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.backend, err)
		}
		flat := flatten(out)
		if !strings.Contains(flat, "allocationMode: ExactCount count: 8 ") {
			t.Errorf("%s: the worker's claim does not ask for its 8 GPUs", tc.backend)
		}
		for _, w := range tc.want {
			if !strings.Contains(flat, w) {
				t.Errorf("%s: the manifest has no %q", tc.backend, w)
			}
		}
	}
	o := opts("sglang", DriverGPUPlane)
	out, err := Dynamo(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flatten(out), "--tp 8 --dp 8 --enable-dp-attention ") {
		t.Errorf("dynamo sglang: no --tp 8 --dp 8 --enable-dp-attention in\n%s", out)
	}
	if _, err := Dynamo(c, opts("trtllm", DriverGPUPlane)); err == nil || !strings.Contains(err.Error(), "attention DP") {
		t.Errorf("dynamo trtllm with dp: got %v, want an error naming attention DP", err)
	}
	out, err = Kubernetes(c, opts(Emulate, DriverGPUPlane))
	if err != nil {
		t.Fatal(err)
	}
	if flat := flatten(out); !strings.Contains(flat, "--tp 1 --role agg --max-num-seqs 257 ") || !strings.Contains(flat, "--ep 8 --dp 8 ") {
		t.Errorf("emulate: no rank batch, ep and dp flags in %s", flat)
	}
}

// flatten joins a manifest's words, so that the arguments, one per line
// in its YAML and some quoted, read as a command line.
func flatten(out []byte) string {
	s := strings.NewReplacer("- ", "", `"`, "").Replace(string(out))
	return strings.Join(strings.Fields(s), " ") + " "
}
