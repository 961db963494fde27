package manifest

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/configure"
)

// A disaggregated deployment sized with speculative decoding drafts in its
// decode workers only, with each engine's own flags: MTP by default, an
// EAGLE-3 draft when one is named. (flatten drops the YAML's quotes.)
func TestSpeculativeEngineArgs(t *testing.T) {
	c := configure.Config{Mode: "disagg",
		Prefill: &configure.Pool{Role: "prefill", Device: "h200_sxm", TP: 1, Workers: 2, GPUsPerWorker: 1, Batch: 8},
		Decode:  &configure.Pool{Role: "decode", Device: "h200_sxm", TP: 2, Workers: 1, GPUsPerWorker: 2, Batch: 64}}
	for _, tc := range []struct {
		backend, draft string
		want           []string
	}{
		{"vllm", "", []string{`--speculative-config '{method:mtp,num_speculative_tokens:3}'`}},
		{"vllm", "org/eagle3-draft", []string{`--speculative-config '{method:eagle3,model:org/eagle3-draft,num_speculative_tokens:3}'`}},
		{"sglang", "", []string{"--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"}},
		{"sglang", "org/eagle3-draft", []string{"--speculative-algorithm EAGLE3 --speculative-draft-model-path org/eagle3-draft --speculative-num-steps 3"}},
		{"trtllm", "", []string{"speculative_config: decoding_type: MTP num_nextn_predict_layers: 3"}},
		{"trtllm", "org/eagle3-draft", []string{"speculative_config: decoding_type: Eagle max_draft_len: 3 speculative_model_dir: org/eagle3-draft eagle3_one_model: true"}},
		{Emulate, "", []string{"--spec-tokens 3 --spec-accept 2.5"}},
	} {
		o := opts(tc.backend, DriverGPUPlane)
		o.Spec = &Speculative{Tokens: 3, Accept: 2.5, Draft: tc.draft}
		out, err := Kubernetes(c, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.backend, err)
		}
		flat := flatten(out)
		for _, w := range tc.want {
			if n := strings.Count(flat, w); n != 1 {
				t.Errorf("%s draft %q: %q appears %d times, want once (the decode worker)", tc.backend, tc.draft, w, n)
			}
		}
		o.Spec = nil
		plain, err := Kubernetes(c, o)
		if err != nil {
			t.Fatal(err)
		}
		if f := flatten(plain); strings.Contains(f, "specul") || strings.Contains(f, "spec-tokens") {
			t.Errorf("%s without a draft: the manifest drafts", tc.backend)
		}
	}
	o := opts("vllm", DriverGPUPlane)
	o.Spec = &Speculative{Tokens: 2, Accept: 1.8}
	out, err := Dynamo(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(flatten(out), `{method:mtp,num_speculative_tokens:2}`); n != 1 {
		t.Errorf("dynamo vllm: the speculative config appears %d times, want once", n)
	}
	o = opts("trtllm", DriverGPUPlane)
	o.Spec = &Speculative{Tokens: 2, Accept: 1.8}
	if _, err := Dynamo(c, o); err == nil || !strings.Contains(err.Error(), "speculative decoding") {
		t.Errorf("dynamo trtllm with a draft: got %v, want an error naming speculative decoding", err)
	}
}

// An aggregated TensorRT-LLM worker has no options file of its own; a
// draft gives it one, and the flag that reads it.
func TestSpeculativeTRTLLMAggregatedOptionsFile(t *testing.T) {
	c := configure.Config{Mode: "agg", Agg: &configure.Pool{Role: "agg", Device: "h200_sxm", TP: 8, Workers: 1, GPUsPerWorker: 8, Batch: 64}}
	o := opts("trtllm", DriverGPUPlane)
	o.Spec = &Speculative{Tokens: 1, Accept: 1.8}
	out, err := Kubernetes(c, o)
	if err != nil {
		t.Fatal(err)
	}
	flat := flatten(out)
	for _, w := range []string{"--extra_llm_api_options /etc/gpuplane/llm-api-options.yaml", "decoding_type: MTP num_nextn_predict_layers: 1", "mountPath: /etc/gpuplane"} {
		if !strings.Contains(flat, w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
}
