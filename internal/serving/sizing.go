package serving

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// maxSizedEngines bounds what PoolSizes proposes: past it the query asks
// for more engines than an estimate simulates.
const maxSizedEngines = 1024

// PoolSizes picks the worker counts of a disaggregated deployment for a
// workload whose counts were not given. A deployment benchmarked at a
// concurrency is sized for it, so the rule is the one operators follow:
// enough decode engines that every user's sequence is resident at once
// (within the engine's sequence cap and KV cache) and each engine's batch
// stays within its knee (decodeKnee), and enough prefill engines to keep up
// with the request rate those decode engines drive when no request waits.
// The rates come from the same step times the simulation runs on. Engines
// are rounded up to whole workers of their attention-DP ranks.
//
// A decodeWorkers above 0 is kept, and the prefill pool sized against it.
func PoolSizes(prefill, decode *perf.Worker, wl Workload, decodeWorkers int) (int, int, error) {
	if err := wl.validate(); err != nil {
		return 0, 0, err
	}
	dc, pdp := decode.Config(), prefill.Config().DP
	resident := min(dc.MaxSeqs, decode.Memory().KVTokens/(wl.ISL+wl.OSL))
	if resident < 1 {
		// Nothing fits: one of each, and the simulation reports the fit error.
		return 1, 1, nil
	}
	decodeEngines := decodeWorkers * dc.DP
	if decodeWorkers < 1 {
		perEngine := min(resident, decodeKnee(decode, wl, resident))
		decodeEngines = min(ceilDiv(wl.Concurrency, perEngine), maxSizedEngines)
		decodeWorkers = min(ceilDiv(decodeEngines, dc.DP), maxSizedEngines/dc.DP)
	}
	batch := ceilDiv(wl.Concurrency, decodeEngines)
	ctx := float64(wl.ISL) + float64(wl.OSL)/2
	tpot := decode.DecodeTokenTime(batch, ctx)

	perPrompt, rate := prefillRate(prefill, wl.ISL, wl.Concurrency)
	cycle := perPrompt + float64(wl.OSL-1)*tpot
	if !(cycle > 0) || !(rate > 0) || math.IsInf(cycle, 0) || math.IsInf(rate, 0) {
		return 0, 0, fmt.Errorf("sizing the pools: step times of %g s per prompt and %g s per token are not usable", perPrompt, tpot)
	}
	demand := float64(wl.Concurrency) / cycle // requests/s with no queue
	prefillEngines := max(1, min(int(math.Ceil(demand/rate-1e-9)), maxSizedEngines))
	return min(ceilDiv(prefillEngines, pdp), maxSizedEngines/pdp), decodeWorkers, nil
}

// decodeKnee is the largest batch (at most limit) whose decode step stays
// within the backend's knee factor (perf.Worker.PoolKnee) of a batch of
// one, found by bisection since step time grows with the batch. Below the
// knee steps are bound by reading the weights and a bigger batch is nearly
// free; past it each sequence adds its own time, so operators stop adding
// users there and add engines instead.
func decodeKnee(w *perf.Worker, wl Workload, limit int) int {
	ctx := float64(wl.ISL) + float64(wl.OSL)/2
	step := func(b int) float64 {
		return w.StepTime(perf.Batch{DecodeSeqs: b, DecodeCtx: float64(b) * ctx, Sampled: b})
	}
	bound := w.PoolKnee() * step(1)
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
// iteration up to the token budget, long ones run in chunks. Iterations are
// built as the engine builds them (engine.AddChunks).
func prefillRate(w *perf.Worker, isl, users int) (perPrompt, rate float64) {
	cfg, window := w.Config(), w.AttentionWindow()
	prompts := func(n, c, ctx int) float64 {
		var b perf.Batch
		engine.AddChunks(&b, n, ctx, c, window, ctx+c == isl)
		return w.StepTime(b)
	}
	budget := max(cfg.MaxBatchedTokens, 1)
	if isl <= budget {
		k := min(budget/isl, users, max(cfg.MaxSeqs, 1))
		return prompts(1, isl, 0), float64(k) / prompts(k, isl, 0)
	}
	var t float64
	for done := 0; done < isl; done += budget {
		t += prompts(1, min(budget, isl-done), done)
	}
	return t, 1 / t
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
