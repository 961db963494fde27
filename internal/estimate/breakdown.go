package estimate

import (
	"math"

	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// Breakdown says where the time of an estimate's iterations goes, at its
// operating point: one decode step of the mean running batch, and one
// prompt computed alone, each split into perf.StepParts.
type Breakdown struct {
	DecodeStep StepShare `json:"decode_step"`
	PromptStep StepShare `json:"prompt"`
	// TPOTDecodeMs is the decode step over the tokens a step gains: the
	// TPOT of sequences that only ever decode. TPOTRestMs is the rest of
	// the estimate's TPOT (never below 0): on aggregated workers the
	// iterations that also carry prompt chunks, which the decoding
	// sequences wait through; on a disaggregated decode pool, which has no
	// prompts, only the batch's changes about its mean (near 0).
	TPOTDecodeMs float64 `json:"tpot_decode_ms"`
	TPOTRestMs   float64 `json:"tpot_rest_ms"`
}

// StepShare is the time of some iterations and its parts, in ms.
type StepShare struct {
	// Sequences is the decode step's batch per engine; Tokens the prompt's
	// length; Context the mean cached tokens a decoding sequence reads.
	Sequences int     `json:"sequences,omitempty"`
	Tokens    int     `json:"tokens,omitempty"`
	Context   float64 `json:"context_tokens,omitempty"`
	// Iterations is how many the prompt takes (chunks of the token budget).
	Iterations int                `json:"iterations,omitempty"`
	Ms         float64            `json:"ms"`
	PartsMs    map[string]float64 `json:"parts_ms"`
}

// breakdown prices the operating point of res: prompt on w (the prefill
// worker when disaggregated), decode on d at the mean decoding batch of
// its engines (serving.Result.MeanDecoding).
func breakdown(w, d *perf.Worker, res *serving.Result, engines int, wl serving.Workload) *Breakdown {
	if res == nil || !res.Fits || engines < 1 {
		return nil // nothing runs: no operating point to split
	}
	n, ctx := res.MeanDecoding(wl.OSL, engines), wl.DecodeContext()
	step := d.StepBreakdown(perf.DecodeBatch(n, ctx))
	b := &Breakdown{DecodeStep: share(step)}
	b.DecodeStep.Sequences, b.DecodeStep.Context = n, ctx
	b.TPOTDecodeMs = step.Total() / d.TokensPerStep() * 1e3
	b.TPOTRestMs = math.Max(0, res.TPOTms-b.TPOTDecodeMs)

	var prompt perf.StepBreakdown
	iters := 0
	serving.EachPromptChunk(w, wl.ISL, func(pb perf.Batch) {
		s := w.StepBreakdown(pb)
		for i := range prompt {
			prompt[i] += s[i]
		}
		iters++
	})
	b.PromptStep = share(prompt)
	b.PromptStep.Tokens, b.PromptStep.Iterations = wl.ISL, iters
	return b
}

func share(s perf.StepBreakdown) StepShare {
	out := StepShare{Ms: s.Total() * 1e3, PartsMs: map[string]float64{}}
	for _, p := range perf.StepParts() {
		if v := s[p]; v > 0 {
			out.PartsMs[p.String()] = v * 1e3
		}
	}
	return out
}
