package serving

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// One prompt alone: TTFT is the API server plus one prefill step.
func TestPrefillOnlySingleUser(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	isl := 3000
	r, err := PrefillOnly(w, Workload{ISL: isl, OSL: 100, Concurrency: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	step := w.StepTime(perf.Batch{PrefillTokens: isl, PrefillSeqs: 1, PrefillPairs: float64(isl) * float64(isl) / 2, Sampled: 1})
	want := (step + w.FrontendTime(isl)) * 1e3
	if math.Abs(r.TTFTms-want) > 1e-6*want {
		t.Errorf("TTFT %.4f ms, want %.4f", r.TTFTms, want)
	}
	if math.Abs(r.RequestsPerS-1e3/r.TTFTms) > 1e-3*r.RequestsPerS {
		t.Errorf("one user: %.3f req/s, want 1/TTFT = %.3f", r.RequestsPerS, 1e3/r.TTFTms)
	}
}

// One sequence decoding: ITL is the decode step at mid context; more
// sequences raise both ITL and the token rate.
func TestDecodeOnlyBatching(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	isl, osl := 2000, 400
	one, err := DecodeOnly(w, Workload{ISL: isl, OSL: osl, Concurrency: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mid := w.StepTime(perf.Batch{DecodeSeqs: 1, DecodeCtx: float64(isl + osl/2), Sampled: 1}) * 1e3
	if math.Abs(one.TPOTms-mid) > 2e-3*mid {
		t.Errorf("ITL %.4f ms, want the mid-context step %.4f", one.TPOTms, mid)
	}
	many, err := DecodeOnly(w, Workload{ISL: isl, OSL: osl, Concurrency: 32}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if many.TPOTms <= one.TPOTms || many.OutputTokensPerS <= 10*one.OutputTokensPerS {
		t.Errorf("batch 32: ITL %.2f (1: %.2f) tok/s %.0f (1: %.0f)", many.TPOTms, one.TPOTms, many.OutputTokensPerS, one.OutputTokensPerS)
	}
	if _, err := DecodeOnly(w, Workload{ISL: isl, OSL: 1, Concurrency: 1}, Options{}); err == nil {
		t.Error("a decode engine with one output token has nothing to measure")
	}
}
