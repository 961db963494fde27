package perf_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
)

// The breakdown is StepTime split: over random iterations of every kind of
// layer the model prices (dense, MoE with experts spread, MLA, linear and
// sparse attention, sliding windows, pipeline stages, speculative
// decoding, kernel tables), its parts are non-negative and sum to
// StepTime, and a part is there exactly when its cost is.
func TestStepBreakdownSumsToStepTime(t *testing.T) {
	mk := func(model, gpu string, be perf.Backend, w catalog.Precision, tp, pp, ep int, spec int, accept float64, k perf.Kernels) *perf.Worker {
		t.Helper()
		p := perf.MustDefaultParams()
		if k != nil {
			p.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return k, nil, nil }
		}
		return perftest.Worker(t, model, gpu, perf.Config{Backend: be, Weights: w, TP: tp, PP: pp, EP: ep, SpecTokens: spec, SpecAccept: accept}, p)
	}
	fake := &perftest.Kernels{GEMMSecs: 1e-15, CtxSecs: 1e-12, GenGamma: 5e-6, GenAlpha: 2e-7, GenBeta: 2e-9, ARSecs: 1e-12}
	for _, tc := range []struct {
		name             string
		w                *perf.Worker
		moe, comm, draft bool
	}{
		{name: "dense tp1", w: mk("Qwen/Qwen3-32B", "h100_sxm", perf.VLLM, catalog.FP8, 1, 1, 0, 0, 0, nil)},
		{name: "dense tp4 pp2", w: mk("meta-llama/Llama-3.1-70B", "h100_sxm", perf.TRTLLM, catalog.FP8, 4, 2, 0, 0, 0, nil), comm: true},
		{name: "MLA MoE ep8", w: mk("deepseek-ai/DeepSeek-V3", "h200_sxm", perf.SGLang, catalog.FP8, 8, 1, 8, 0, 0, nil), moe: true, comm: true},
		{name: "linear attention MoE", w: mk("Qwen/Qwen3.5-397B-A17B", "b200_sxm", perf.SGLang, catalog.FP8, 4, 1, 0, 0, 0, nil), moe: true, comm: true},
		{name: "sliding window MoE", w: mk("openai/gpt-oss-120b", "h100_sxm", perf.VLLM, catalog.FP4, 2, 1, 0, 0, 0, nil), moe: true, comm: true},
		{name: "sparse attention", w: mk("zai-org/GLM-5", "b200_sxm", perf.SGLang, catalog.FP8, 8, 1, 0, 0, 0, nil), moe: true, comm: true},
		{name: "speculative", w: mk("Qwen/Qwen3-32B", "h100_sxm", perf.VLLM, catalog.FP8, 2, 1, 0, 3, 2.5, nil), comm: true, draft: true},
		{name: "kernel tables", w: mk("Qwen/Qwen3-32B", "h100_sxm", perf.VLLM, catalog.BF16, 2, 1, 0, 0, 0, fake), comm: true},
		{name: "kernel tables MoE", w: mk("Qwen/Qwen3-30B-A3B", "h100_sxm", perf.VLLM, catalog.BF16, 2, 1, 0, 0, 0, fake), moe: true, comm: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			for i := 0; i < 200; i++ {
				var b perf.Batch
				if rng.IntN(2) == 0 {
					c, ctx := 1+rng.IntN(8192), rng.IntN(16384)
					b = perf.Batch{PrefillTokens: c, PrefillSeqs: 1, PrefillCtx: float64(ctx),
						PrefillPairs: float64(c) * (float64(ctx) + float64(c)/2), PrefillSlidingPairs: float64(c) * 64}
					if rng.IntN(2) == 0 {
						b.Sampled = 1
					}
				}
				if n := rng.IntN(300); n > 0 || b.PrefillTokens == 0 {
					n = max(n, 1)
					b.DecodeSeqs, b.Sampled = n, b.Sampled+n
					b.DecodeCtx = float64(n) * float64(1+rng.IntN(32768))
				}
				got, want := tc.w.StepBreakdown(b), tc.w.StepTime(b)
				if math.Abs(got.Total()-want) > 1e-9*want {
					t.Fatalf("%+v: parts sum to %g s, StepTime %g s: %v", b, got.Total(), want, got)
				}
				for _, p := range perf.StepParts() {
					if !(got[p] >= 0) {
						t.Fatalf("%+v: %s %g s", b, p, got[p])
					}
				}
				if (got[perf.PartExperts] > 0) != tc.moe {
					t.Fatalf("%+v: experts %g s on a model with experts %v", b, got[perf.PartExperts], tc.moe)
				}
				if (got[perf.PartCommunication] > 0) != tc.comm {
					t.Fatalf("%+v: communication %g s with more than one GPU %v", b, got[perf.PartCommunication], tc.comm)
				}
				if got[perf.PartPromptFloor] > 0 && (b.PrefillTokens == 0 || !tc.moe) {
					t.Fatalf("%+v: a prompt floor of %g s", b, got[perf.PartPromptFloor])
				}
				if (got[perf.PartDraft] > 0) != (tc.draft && b.DecodeSeqs > 0) {
					t.Fatalf("%+v: draft %g s", b, got[perf.PartDraft])
				}
				if got[perf.PartDenseGEMM] <= 0 || got[perf.PartOverheads] <= 0 || got[perf.PartAttention] <= 0 {
					t.Fatalf("%+v: every step has GEMMs, attention and overheads: %v", b, got)
				}
			}
		})
	}
}

// A short prompt to an SGLang MoE model waits for the prompt floor, and
// the breakdown names that wait rather than hiding it in the overheads.
func TestStepBreakdownNamesThePromptFloor(t *testing.T) {
	w := perftest.Worker(t, "deepseek-ai/DeepSeek-V3", "h200_sxm", perf.Config{Backend: perf.SGLang, Weights: catalog.FP8, TP: 8})
	b := perf.Batch{PrefillTokens: 64, PrefillSeqs: 1, PrefillPairs: 64 * 32, Sampled: 1}
	got := w.StepBreakdown(b)
	floor := float64(w.Config().Model.MoELayers()) * perf.MustDefaultParams().Backends[perf.SGLang].MoEPromptFloorUs * 1e-6
	if got[perf.PartPromptFloor] <= 0 || got[perf.PartPromptFloor] >= floor {
		t.Fatalf("prompt floor part %g s of a %g s floor: %v", got[perf.PartPromptFloor], floor, got)
	}
}

func TestStepPartNames(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range perf.StepParts() {
		n := p.String()
		if n == "" || n == "unknown" || seen[n] {
			t.Fatalf("part %d named %q", p, n)
		}
		seen[n] = true
	}
	if perf.StepPart(-1).String() != "unknown" || perf.StepPart(len(seen)).String() != "unknown" {
		t.Fatal("a part outside the list must read unknown")
	}
}
