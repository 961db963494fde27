package estimate

import (
	"math"
	"sort"

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
	b := &Breakdown{DecodeStep: DecodeStepShare(d, res.MeanDecoding(wl.OSL, engines), wl.DecodeContext())}
	b.TPOTDecodeMs = b.DecodeStep.Ms / d.TokensPerStep()
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

// DecodeStepShare is one decode step of n sequences, each ctx tokens
// into its context, on d, split into its parts.
func DecodeStepShare(d *perf.Worker, n int, ctx float64) StepShare {
	s := share(d.StepBreakdown(perf.DecodeBatch(n, ctx)))
	s.Sequences, s.Context = n, ctx
	return s
}

// PartMs is one part of a StepShare.
type PartMs struct {
	Name string
	Ms   float64
}

// Largest lists the parts largest first (ties by name, so the order is
// stable across runs).
func (s StepShare) Largest() []PartMs {
	ps := make([]PartMs, 0, len(s.PartsMs))
	for n, v := range s.PartsMs {
		ps = append(ps, PartMs{n, v})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Ms > ps[j].Ms || ps[i].Ms == ps[j].Ms && ps[i].Name < ps[j].Name })
	return ps
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
