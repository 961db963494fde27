package serving

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// maxSizedEngines bounds what PoolSizes proposes: past it the query asks
// for more engines than an estimate simulates.
const maxSizedEngines = 1024

// PoolSizes picks the engine counts of a disaggregated deployment for a
// workload whose worker counts were not given. A deployment benchmarked at
// a concurrency is sized for it, so the rule is the one operators follow:
// enough decode engines that every user's sequence is resident at once
// (within the engine's sequence cap and KV cache) and each engine's batch
// stays within its knee (decodeKnee), and enough prefill engines to keep up
// with the request rate those decode engines drive when no request waits.
// The rates come from the same step times the simulation runs on.
//
// A decodeEngines above 0 is kept, and the prefill pool sized against it.
func PoolSizes(prefill, decode *perf.Worker, wl Workload, decodeEngines int) (int, int, error) {
	if err := wl.validate(); err != nil {
		return 0, 0, err
	}
	dc, pc := decode.Config(), prefill.Config()
	resident := min(dc.MaxSeqs, decode.Memory().KVTokens/(wl.ISL+wl.OSL))
	if resident < 1 {
		// Nothing fits: one of each, and the simulation reports the fit error.
		return 1, 1, nil
	}
	if decodeEngines < 1 {
		perEngine := min(resident, decodeKnee(decode, wl, resident))
		decodeEngines = ceilDiv(wl.Concurrency, perEngine)
	}
	batch := ceilDiv(wl.Concurrency, decodeEngines)
	ctx := float64(wl.ISL) + float64(wl.OSL)/2
	tpot := decode.StepTime(perf.Batch{DecodeSeqs: batch, DecodeCtx: float64(batch) * ctx, Sampled: batch})

	perPrompt, rate := prefillRate(prefill, pc, wl.ISL, wl.Concurrency)
	cycle := perPrompt + float64(wl.OSL-1)*tpot
	if !(cycle > 0) || !(rate > 0) || math.IsInf(cycle, 0) || math.IsInf(rate, 0) {
		return 0, 0, fmt.Errorf("sizing the pools: step times of %g s per prompt and %g s per token are not usable", perPrompt, tpot)
	}
	demand := float64(wl.Concurrency) / cycle // requests/s with no queue
	prefillEngines := int(math.Ceil(demand/rate - 1e-9))
	prefillEngines = max(1, min(prefillEngines, maxSizedEngines))
	return prefillEngines, min(decodeEngines, maxSizedEngines), nil
}

// kneeFactor defines a decode engine's knee: the batch whose step takes
// this many times a lone sequence's. Below it steps are bound by reading the
// weights and a bigger batch is nearly free; past it each sequence adds its
// own time, so operators stop adding users there and add engines instead.
// 3.5 is the geometric mean of the best factors on the SGLang (6) and the
// TensorRT-LLM (2) runs without worker counts, each scored on the other
// backend (docs/PERFORMANCE-MODEL.md).
const kneeFactor = 3.5

// decodeKnee is the largest batch (at most limit) whose decode step stays
// within kneeFactor of a batch of one, found by bisection since step time
// grows with the batch.
func decodeKnee(w *perf.Worker, wl Workload, limit int) int {
	ctx := float64(wl.ISL) + float64(wl.OSL)/2
	step := func(b int) float64 {
		return w.StepTime(perf.Batch{DecodeSeqs: b, DecodeCtx: float64(b) * ctx, Sampled: b})
	}
	bound := kneeFactor * step(1)
	lo, hi := 1, limit
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if step(mid) <= bound {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// prefillRate is one prefill engine's time for a prompt alone and its rate
// in prompts per second when prompts queue: short prompts share an
// iteration up to the token budget, long ones run in chunks.
func prefillRate(w *perf.Worker, cfg perf.Config, isl, users int) (perPrompt, rate float64) {
	budget := max(cfg.MaxBatchedTokens, 1)
	if isl <= budget {
		k := min(budget/isl, users, max(cfg.MaxSeqs, 1))
		one := w.StepTime(promptBatch(1, isl, 0))
		all := w.StepTime(promptBatch(k, isl, 0))
		return one, float64(k) / all
	}
	var t float64
	for done := 0; done < isl; done += budget {
		b := promptBatch(1, min(budget, isl-done), done)
		if done+budget < isl {
			b.Sampled = 0 // only the last chunk samples a token
		}
		t += w.StepTime(b)
	}
	return t, 1 / t
}

// promptBatch is an iteration of k prompt chunks of c tokens after ctx
// cached tokens, built as the engine builds it.
func promptBatch(k, c, ctx int) perf.Batch {
	pairs := float64(c) * (float64(ctx) + float64(c)/2)
	return perf.Batch{PrefillTokens: k * c, PrefillSeqs: k, PrefillCtx: float64(k * ctx), PrefillPairs: float64(k) * pairs, Sampled: k}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
