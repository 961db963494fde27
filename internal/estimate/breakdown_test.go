package estimate

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/serving"
)

func sumParts(s StepShare) float64 {
	t := 0.0
	for _, v := range s.PartsMs {
		t += v
	}
	return t
}

// The breakdown's operating point agrees with the engine loop: where
// prompts are a few tokens, decode steps are nearly all of the estimate's
// TPOT and the batch is every user; with 4,000-token prompts on the same
// engine, the prompt iterations show as the rest of TPOT.
func TestBreakdownAgreesWithTheLoop(t *testing.T) {
	q := Defaults()
	q.Breakdown, q.ISL, q.OSL, q.Concurrency = true, 16, 512, 8
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := out.Breakdown
	if b == nil || b.DecodeStep.Sequences != 8 || b.DecodeStep.Context != 16+256 {
		t.Fatalf("decode-bound breakdown: %+v", b)
	}
	if math.Abs(b.TPOTDecodeMs-out.TPOTms) > 0.05*out.TPOTms || b.TPOTRestMs > 0.05*out.TPOTms {
		t.Fatalf("16-token prompts: TPOT %.2f ms split %.2f + %.2f", out.TPOTms, b.TPOTDecodeMs, b.TPOTRestMs)
	}
	for _, s := range []StepShare{b.DecodeStep, b.PromptStep} {
		if math.Abs(sumParts(s)-s.Ms) > 1e-9*s.Ms || s.PartsMs["experts"] != 0 || s.PartsMs["dense_gemm"] <= 0 {
			t.Fatalf("parts of a dense model's step: %+v", s)
		}
	}

	q.ISL, q.Concurrency = 4000, 32
	long, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lb := long.Breakdown
	if lb.TPOTRestMs < 0.1*long.TPOTms || math.Abs(lb.TPOTDecodeMs+lb.TPOTRestMs-long.TPOTms) > 1e-9*long.TPOTms {
		t.Fatalf("4,000-token prompts: TPOT %.2f ms split %.2f + %.2f; the prompt iterations must show", long.TPOTms, lb.TPOTDecodeMs, lb.TPOTRestMs)
	}
	if lb.PromptStep.Tokens != 4000 || lb.PromptStep.Iterations != 1 || lb.PromptStep.Ms <= b.PromptStep.Ms {
		t.Fatalf("prompt of 4,000 tokens: %+v (16 tokens: %.2f ms)", lb.PromptStep, b.PromptStep.Ms)
	}
}

// A prompt past the token budget runs in chunks, each an iteration, on the
// prefill worker of a disaggregated deployment; without the key there is
// no breakdown.
func TestBreakdownChunksAndPools(t *testing.T) {
	q := Defaults()
	q.Mode, q.TP, q.PrefillTP, q.DecodeTP, q.PrefillWorkers, q.DecodeWorkers = "disagg", 1, 1, 2, 2, 1
	q.ISL, q.MaxBatchedTokens = 20000, 8192
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Breakdown != nil {
		t.Fatal("a breakdown nobody asked for")
	}
	q.Breakdown = true
	if out, err = Run(env(), q, serving.Options{}); err != nil {
		t.Fatal(err)
	}
	b := out.Breakdown
	if b.PromptStep.Iterations != 3 || b.DecodeStep.PartsMs["communication"] <= 0 || b.PromptStep.PartsMs["communication"] != 0 {
		t.Fatalf("20,000 tokens in 8,192-token iterations on tp1 prefill, tp2 decode: %+v", b)
	}
	if b.DecodeStep.Sequences < 1 || b.DecodeStep.Sequences > q.Concurrency {
		t.Fatalf("decode batch %d of %d users", b.DecodeStep.Sequences, q.Concurrency)
	}

	// A deployment that does not fit runs nothing to split.
	big := Defaults()
	big.Model, big.GPU, big.Precision, big.Breakdown = "meta-llama/Llama-3.1-70B", "l40s", "bf16", true
	out, err = Run(env(), big, serving.Options{})
	if err == nil || out == nil || out.Fits || out.Breakdown != nil {
		t.Fatalf("70B in bf16 on one L40S: %v, breakdown %+v", err, out)
	}
}
