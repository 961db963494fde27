// Package serving estimates steady-state serving performance of aggregated
// and disaggregated deployments by running their engines, iteration by
// iteration, under a closed-loop load of N concurrent users (the way serving
// benchmarks measure at a fixed concurrency). It is pure.
package serving

import (
	"math"
	"sort"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// Result is a serving estimate. Latencies are means over the measured
// requests (TPOT excludes the first token), with percentiles.
type Result struct {
	Mode                    string       `json:"mode"`
	TTFTms                  float64      `json:"ttft_ms"`
	TPOTms                  float64      `json:"tpot_ms"`
	ITLms                   float64      `json:"itl_ms"`
	E2Ems                   float64      `json:"e2e_ms"`
	TTFTP50ms               float64      `json:"ttft_p50_ms"`
	TTFTP90ms               float64      `json:"ttft_p90_ms"`
	TTFTP99ms               float64      `json:"ttft_p99_ms"`
	TPOTP90ms               float64      `json:"tpot_p90_ms"`
	TPOTP99ms               float64      `json:"tpot_p99_ms"`
	OutputTokensPerS        float64      `json:"output_tokens_per_s"`
	OutputTokensPerSPerGPU  float64      `json:"output_tokens_per_s_per_gpu"`
	OutputTokensPerSPerUser float64      `json:"output_tokens_per_s_per_user"`
	RequestsPerS            float64      `json:"requests_per_s"`
	GPUs                    int          `json:"gpus"`
	Concurrency             int          `json:"concurrency"`
	KVCacheTokens           int          `json:"kv_cache_tokens"`
	MaxConcurrency          int          `json:"max_concurrency"`
	Fits                    bool         `json:"fits"`
	Memory                  *perf.Memory `json:"memory,omitempty"`
	DecodeMemory            *perf.Memory `json:"decode_memory,omitempty"`
	KVTransferMs            float64      `json:"kv_transfer_ms,omitempty"`
	// HandoffFixedMs is the part of KVTransferMs that is the backend's
	// fixed hand-off cost per request (perf.BackendParams.HandoffMs).
	HandoffFixedMs float64 `json:"handoff_fixed_ms,omitempty"`
	// TTFTFloorMs is the least TTFT a request sees, latency on its path
	// outside the engine (perf.Worker.TTFTFloor); 0 when there is none.
	TTFTFloorMs float64 `json:"ttft_floor_ms,omitempty"`
	// DecodeWaitMs is the mean time a disaggregated request waits after its
	// hand-off for a decode engine to take it: the step in progress, and a
	// free slot when the pool is full (part of TTFT).
	DecodeWaitMs     float64 `json:"decode_wait_ms,omitempty"`
	MeasuredRequests int     `json:"measured_requests"`
	SimulatedSeconds float64 `json:"simulated_seconds"`
	Iterations       int64   `json:"iterations"`

	// ttfts and tpots are the measured samples in seconds, sorted, so any
	// percentile an SLO names can be judged.
	ttfts, tpots []float64
}

// MeanDecoding is the mean number of sequences decoding on each of
// engines engines, by Little's law: requests per second times the OSL-1
// TPOTs each request decodes, over the engines; at least one.
func (r *Result) MeanDecoding(osl, engines int) int {
	if engines < 1 {
		engines = 1
	}
	return max(1, int(math.Round(r.RequestsPerS/float64(engines)*float64(max(osl-1, 0))*r.TPOTms/1e3)))
}

// TTFTAt is the TTFT in ms at percentile pct (0 < pct < 100), or the mean for pct 0.
func (r *Result) TTFTAt(pct float64) float64 {
	if pct <= 0 || len(r.ttfts) == 0 {
		return r.TTFTms
	}
	return quantile(r.ttfts, pct/100) * 1e3
}

// TPOTAt is the TPOT (the mean inter-token latency of a request) in ms at
// percentile pct over requests, or the mean for pct 0.
func (r *Result) TPOTAt(pct float64) float64 {
	if pct <= 0 || len(r.tpots) == 0 {
		return r.TPOTms
	}
	return quantile(r.tpots, pct/100) * 1e3
}

// sample is one measured request; wait is its time between the hand-off
// and a decode slot (disaggregated serving).
type sample struct{ ttft, tpot, e2e, wait float64 }

// summarise fills the latency statistics of r from the measured samples.
func summarise(r *Result, s []sample) {
	if len(s) == 0 {
		return
	}
	var tt, tp, e2, wait float64
	ttfts := make([]float64, len(s))
	tpots := make([]float64, len(s))
	for i, x := range s {
		tt += x.ttft
		tp += x.tpot
		e2 += x.e2e
		wait += x.wait
		ttfts[i], tpots[i] = x.ttft, x.tpot
	}
	n := float64(len(s))
	r.TTFTms = tt / n * 1e3
	r.TPOTms = tp / n * 1e3
	r.ITLms = r.TPOTms
	r.E2Ems = e2 / n * 1e3
	r.DecodeWaitMs = wait / n * 1e3
	sort.Float64s(ttfts)
	sort.Float64s(tpots)
	r.TTFTP50ms = quantile(ttfts, 0.5) * 1e3
	r.TTFTP90ms = quantile(ttfts, 0.90) * 1e3
	r.TTFTP99ms = quantile(ttfts, 0.99) * 1e3
	r.TPOTP90ms = quantile(tpots, 0.90) * 1e3
	r.TPOTP99ms = quantile(tpots, 0.99) * 1e3
	r.ttfts, r.tpots = ttfts, tpots
	r.MeasuredRequests = len(s)
	if r.TPOTms > 0 {
		r.OutputTokensPerSPerUser = 1e3 / r.TPOTms
	}
}

// quantile of sorted xs with linear interpolation.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}
