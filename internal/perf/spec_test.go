package perf

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

func TestCheckSpec(t *testing.T) {
	cases := []struct {
		k    int
		a    float64
		want string // "" for accepted
	}{
		{0, 0, ""},
		{3, 2.5, ""},
		{1, 2, ""},
		{3, 1, ""},
		{0, 2, "spec_accept: 2 needs spec_tokens"},
		{3, 0, "spec_accept: required with spec_tokens 3"},
		{3, 4.5, "spec_accept: 4.5 must be 1 to spec_tokens+1 (4)"},
		{3, 0.5, "spec_accept: 0.5 must be 1"},
		{3, math.NaN(), "spec_accept: NaN must be 1"},
		{-1, 1, "spec_tokens: -1 must be 0"},
		{MaxSpecTokens + 1, 2, "spec_tokens: 17 must be 0"},
	}
	for _, c := range cases {
		err := CheckSpec(c.k, c.a)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("k %d a %g: %v", c.k, c.a, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("k %d a %g: got %v, want %q", c.k, c.a, err, c.want)
		}
	}
}

// A verify step of 1+k tokens a sequence costs about one plain step while
// decode reads the weights (few sequences), and about 1+k plain steps once
// the GEMMs are compute-bound (many): speculation pays at low load only.
func TestSpeculativeStepTime(t *testing.T) {
	const k = 3
	plain := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 1)
	spec := catalogWorker(t, "Qwen/Qwen3-32B", "h100_sxm", "", Config{Weights: catalog.FP8, TP: 1, SpecTokens: k, SpecAccept: 2.5}, MustDefaultParams())
	if spec.TokensPerStep() != 2.5 || plain.TokensPerStep() != 1 {
		t.Fatalf("tokens per step: %g with speculation, %g without", spec.TokensPerStep(), plain.TokensPerStep())
	}
	// Short contexts, so that the linear layers dominate.
	step := func(w *Worker, n int) float64 { return decodeStep(w, n, 64) }
	if r := step(spec, 1) / step(plain, 1); r < 1 || r > 1.3 {
		t.Errorf("one sequence: verify step %.2fx a plain one, want 1-1.3x (the weights are read once)", r)
	}
	if r := step(spec, 512) / step(plain, 512); r < 2.5 || r > 1+k+0.5 {
		t.Errorf("512 sequences: verify step %.2fx a plain one, want 2.5-%.1fx (compute-bound)", r, 1+k+0.5)
	}
	// The engine's closed form needs the step affine in the decode context.
	b := Batch{DecodeSeqs: 8, Sampled: 8}
	b2 := b
	b2.DecodeCtx = 8 * 4000
	got := spec.StepTime(b2) - spec.StepTime(b)
	if want := spec.DecodeCtxCost() * b2.DecodeCtx; math.Abs(got-want) > 1e-12 {
		t.Errorf("context slope: %g s over 32000 tokens, want %g", got, want)
	}
	if spec.DecodeCtxCost() <= plain.DecodeCtxCost() {
		t.Errorf("context cost %g with speculation, %g without: the draft layer reads the context too", spec.DecodeCtxCost(), plain.DecodeCtxCost())
	}
	// Prompts alone are priced as without speculation.
	if a, c := prefillStep(spec, 4096), prefillStep(plain, 4096); a != c {
		t.Errorf("prompt-only step %.3f ms with speculation, %.3f ms without", 1e3*a, 1e3*c)
	}
}

// The draft is one more layer: its weights and its share of every token's
// cache are held, so the cache holds fewer tokens.
func TestSpeculativeMemory(t *testing.T) {
	plain := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 1)
	spec := catalogWorker(t, "Qwen/Qwen3-32B", "h100_sxm", "", Config{Weights: catalog.FP8, TP: 1, SpecTokens: 2, SpecAccept: 2}, MustDefaultParams())
	layers := float64(plain.Config().Model.Layers)
	pm, sm := plain.Memory(), spec.Memory()
	emb := plain.Config().Model.EmbeddingParams() * catalog.BF16.Bytes() / (1 << 30)
	if got, want := sm.WeightsGiB-pm.WeightsGiB, (pm.WeightsGiB-emb)/layers; math.Abs(got-want) > 1e-9 {
		t.Errorf("draft weights %.3f GiB, want one layer's %.3f GiB", got, want)
	}
	if got, want := sm.KVBytesPerToken/pm.KVBytesPerToken, (layers+1)/layers; math.Abs(got-want) > 1e-12 {
		t.Errorf("cache per token %.4fx, want %.4fx (one more layer)", got, want)
	}
	if sm.KVTokens >= pm.KVTokens {
		t.Errorf("cache holds %d tokens with the draft, %d without", sm.KVTokens, pm.KVTokens)
	}
}
