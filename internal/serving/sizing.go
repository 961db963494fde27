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
	tpot := decode.DecodeTokenTime(batch, wl.DecodeContext())

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
	ctx := wl.DecodeContext()
	step := func(b int) float64 { return w.StepTime(perf.DecodeBatch(b, ctx)) }
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
// iteration up to the token budget, long ones run in chunks.
func prefillRate(w *perf.Worker, isl, users int) (perPrompt, rate float64) {
	cfg := w.Config()
	var t float64
	EachPromptChunk(w, isl, func(b perf.Batch) { t += w.StepTime(b) })
	if budget := max(cfg.MaxBatchedTokens, 1); isl <= budget {
		k := min(budget/isl, users, max(cfg.MaxSeqs, 1))
		var b perf.Batch
		engine.AddChunks(&b, k, 0, isl, w.AttentionWindow(), true)
		return t, float64(k) / w.StepTime(b)
	}
	return t, 1 / t
}

// EachPromptChunk calls f with each iteration of one prompt of isl tokens
// computed alone on w: chunks of its token budget, built as the engine
// builds them (engine.AddChunks).
func EachPromptChunk(w *perf.Worker, isl int, f func(perf.Batch)) {
	budget, window := max(w.Config().MaxBatchedTokens, 1), w.AttentionWindow()
	for done := 0; done < isl; {
		c := min(budget, isl-done)
		var b perf.Batch
		engine.AddChunks(&b, 1, done, c, window, done+c == isl)
		f(b)
		done += c
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
