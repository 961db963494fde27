package serving

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
)

// A TensorRT-LLM attention-DP deployment under load: the hold shows as
// TTFT and does not slow decode; dp 1 and a backend without a hold are
// untouched.
func TestADPBalanceInEstimates(t *testing.T) {
	var decodeStep float64 // ms, dp 8: one step of 16 sequences a rank
	run := func(be perf.Backend, dp, hold int) *Result {
		t.Helper()
		p := perf.MustDefaultParams().Clone()
		p.Backends[be].ADPBalanceIters = hold
		// Without the TTFT floor, which sits under every request's TTFT
		// outside the engine and would stand in for the hold's wait.
		p.Backends[be].MoETTFTFloorExpertUs = 0
		w := perftest.Worker(t, "deepseek-ai/DeepSeek-R1", "b200_sxm",
			perf.Config{Backend: be, Weights: catalog.FP4, KV: catalog.FP8, TP: 8 / dp, DP: dp, EP: 8}, p)
		res, err := Aggregated(w, dp, Workload{ISL: 1024, OSL: 1024, Concurrency: 128}, Options{Harness: Burst})
		if err != nil {
			t.Fatal(err)
		}
		if dp == 8 {
			decodeStep = 1e3 * w.StepTime(perf.Batch{DecodeSeqs: 16, DecodeCtx: 16 * 1536, Sampled: 16})
		}
		return res
	}
	without := run(perf.TRTLLM, 8, 0)
	for _, hold := range []int{10, 20, 50} {
		with := run(perf.TRTLLM, 8, hold)
		t.Logf("hold %d: TTFT %.0f ms (without %.0f), TPOT %.1f ms (without %.1f)", hold, with.TTFTms, without.TTFTms, with.TPOTms, without.TPOTms)
		if !(with.TTFTms > 1.2*without.TTFTms) {
			t.Errorf("dp 8 TTFT %.0f ms with a %d-iteration hold, %.0f ms without: want the hold to show", with.TTFTms, hold, without.TTFTms)
		}
		// The hold must not slow decode. It may speed it up, by no more
		// than the prompt iterations' share: the ranks' prompts run in
		// fewer, shared iterations, each of which every decoding sequence
		// waits through, but no step is shorter than a decode step.
		if with.TPOTms > 1.02*without.TPOTms || with.TPOTms < decodeStep {
			t.Errorf("dp 8 TPOT %.1f ms with a %d-iteration hold, %.1f without, decode steps alone %.1f: want between the decode step and no hold's", with.TPOTms, hold, without.TPOTms, decodeStep)
		}
	}
	if a, b := run(perf.TRTLLM, 1, 0), run(perf.TRTLLM, 1, 50); a.TTFTms != b.TTFTms || a.TPOTms != b.TPOTms {
		t.Errorf("dp 1: %.1f/%.1f ms with a hold, %.1f/%.1f without: want no change", b.TTFTms, b.TPOTms, a.TTFTms, a.TPOTms)
	}
}
