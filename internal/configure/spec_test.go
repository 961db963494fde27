package configure

import (
	"strings"
	"testing"
)

// Speculative decoding shortens each sequence's steps, so the same ITL
// target holds more users per GPU; a request without an acceptance length
// is refused with the field named.
func TestSearchWithSpeculativeDecoding(t *testing.T) {
	plain := mustSearch(t, reference())
	r := reference()
	r.SpecTokens, r.SpecAccept = 3, 2.4
	spec := mustSearch(t, r)
	if plain.Best == nil || spec.Best == nil {
		t.Fatal("no best deployment")
	}
	if spec.SpecTokens != 3 || spec.SpecAccept != 2.4 || plain.SpecTokens != 0 {
		t.Errorf("results say drafting %d/%g (plain %d)", spec.SpecTokens, spec.SpecAccept, plain.SpecTokens)
	}
	if spec.Best.TokensPerSPerGPU <= 1.2*plain.Best.TokensPerSPerGPU {
		t.Errorf("best %.0f tok/s/GPU with speculation, %.0f without: want at least 1.2x under a 30 ms ITL", spec.Best.TokensPerSPerGPU, plain.Best.TokensPerSPerGPU)
	}
	r.SpecAccept = 0
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "spec_accept: required") {
		t.Errorf("no acceptance length: %v", err)
	}
}

func TestServingRequestSpeculativeKeys(t *testing.T) {
	doc := `apiVersion: gpuplane.io/v1alpha1
kind: ServingRequest
metadata: {name: mtp}
spec:
  model: Qwen/Qwen3-32B
  specTokens: 2
  specAccept: 1.9
  workload: {isl: 4000, osl: 500}
  sla: {ttft: 500, itl: 30}
  hardware: {gpu: h200_sxm, totalGpus: 8}
`
	f, err := ParseFile([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if f.Request.SpecTokens != 2 || f.Request.SpecAccept != 1.9 {
		t.Errorf("spec %d / %g, want 2 / 1.9", f.Request.SpecTokens, f.Request.SpecAccept)
	}
}
