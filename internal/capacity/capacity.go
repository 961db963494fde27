// Package capacity answers the planner's questions about one prefill and
// one decode replica from the performance model, in microseconds: prompt
// latency and queueing for prefill, step time against batch for decode.
// A replica of attention-DP ranks spreads its requests over them, each
// rank with its own queue and batch (taken as balanced; the planner's
// correction absorbs what their stepping together adds). It is pure.
package capacity

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// Model is a disaggregated deployment's two engines.
type Model struct {
	Prefill, Decode *perf.Worker
	// SameDomain puts the KV hand-off on NVLink.
	SameDomain bool
}

// New checks the two workers.
func New(prefill, decode *perf.Worker, sameDomain bool) (*Model, error) {
	if prefill == nil || decode == nil {
		return nil, fmt.Errorf("capacity: prefill and decode workers are required")
	}
	return &Model{Prefill: prefill, Decode: decode, SameDomain: sameDomain}, nil
}

// prompt is the isolated latency of one prompt (API server, chunked
// prefill, KV hand-off) and the service time per prompt at saturation, in ms.
func (m *Model) prompt(isl float64) (t1, service float64) {
	w := m.Prefill
	cfg := w.Config()
	n := max(1, int(math.Round(isl)))
	budget := cfg.MaxBatchedTokens
	compute := 0.0
	for done := 0; done < n; {
		c := min(budget, n-done)
		b := perf.Batch{PrefillTokens: c, PrefillSeqs: 1, PrefillCtx: float64(done),
			PrefillPairs: float64(c) * (float64(done) + float64(c)/2)}
		if done+c == n {
			b.Sampled = 1
		}
		compute += w.StepTime(b)
		done += c
	}
	front := w.FrontendTime(n)
	transfer := perf.KVTransferTime(n, m.Prefill, m.Decode, m.SameDomain)
	t1 = (front + compute + transfer) * 1e3
	service = compute
	if k := budget / n; k > 1 {
		// Short prompts share an iteration: k of them per step.
		pairs := float64(k) * float64(n) * float64(n) / 2
		service = w.StepTime(perf.Batch{PrefillTokens: k * n, PrefillSeqs: k, PrefillPairs: pairs, Sampled: k}) / float64(k)
	}
	return t1, math.Max(service, front) * 1e3
}

// ranks is how many attention-DP ranks a replica of w has.
func ranks(w *perf.Worker) float64 { return float64(max(w.Config().DP, 1)) }

// PrefillTTFT is the TTFT (ms) at percentile pct (0: the mean) at rate
// req/s to a replica: the isolated latency plus M/D/1 queueing at each
// rank's share of the rate.
func (m *Model) PrefillTTFT(isl, rate, pct float64) float64 {
	t1, s := m.prompt(isl)
	return QueueTTFTAt(t1, s, rate/ranks(m.Prefill), pct)
}

// PrefillRate is the most req/s a replica takes with its TTFT at
// percentile pct (0: the mean) inside ttftMs (0 if one prompt misses it).
func (m *Model) PrefillRate(isl, ttftMs, pct float64) float64 {
	t1, s := m.prompt(isl)
	return ranks(m.Prefill) * QueueRateAt(t1, s, ttftMs, pct)
}

// DecodeITL is the time per token (ms) of a replica holding batch requests at
// mid-answer context, spread over its ranks.
func (m *Model) DecodeITL(isl, osl, batch float64) float64 {
	return m.rankITL(isl, osl, batch/ranks(m.Decode))
}

// rankITL is the time per token (ms) of one rank decoding batch requests:
// its step time, over the tokens a step gains under speculative decoding.
func (m *Model) rankITL(isl, osl, batch float64) float64 {
	return m.Decode.DecodeTokenTime(int(math.Max(1, math.Ceil(batch))), isl+osl/2) * 1e3
}

// DecodeRate is the most req/s a replica takes inside itlMs: on each rank
// the largest batch the cache, the sequence cap and the ITL allow, over
// the time a request decodes.
func (m *Model) DecodeRate(isl, osl, itlMs float64) float64 {
	cfg := m.Decode.Config()
	most := min(cfg.MaxSeqs, int(float64(m.Decode.Memory().KVTokens)/math.Max(isl+osl, 1)))
	if most < 1 || m.rankITL(isl, osl, 1) > itlMs {
		return 0
	}
	lo, hi := 1, most
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if m.rankITL(isl, osl, float64(mid)) <= itlMs {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return ranks(m.Decode) * float64(lo) / (math.Max(osl-1, 1) * m.rankITL(isl, osl, float64(lo)) / 1e3)
}
