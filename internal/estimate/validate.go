package estimate

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// Bounds of one query: past them a query is a mistake, or work no
// estimate should take on (a run simulates concurrency x rounds requests).
const (
	MaxUsers    = 100_000
	MaxTokens   = 10_000_000
	maxParallel = 1024
	maxRounds   = 1000
)

// Validate names the first field out of range, with the range.
func (q *Query) Validate() error {
	ints := []struct {
		name   string
		v, max int
	}{
		{"tp", q.TP, maxParallel}, {"pp", q.PP, maxParallel}, {"ep", q.EP, maxParallel}, {"workers", q.Workers, maxParallel},
		{"prefill_tp", q.PrefillTP, maxParallel}, {"decode_tp", q.DecodeTP, maxParallel}, {"prefill_pp", q.PrefillPP, maxParallel},
		{"decode_pp", q.DecodePP, maxParallel}, {"prefill_workers", q.PrefillWorkers, maxParallel}, {"decode_workers", q.DecodeWorkers, maxParallel},
		{"dp", q.DP, maxParallel}, {"prefill_dp", q.PrefillDP, maxParallel}, {"decode_dp", q.DecodeDP, maxParallel},
		{"prefill_ep", q.PrefillEP, maxParallel}, {"decode_ep", q.DecodeEP, maxParallel},
		{"max_batched_tokens", q.MaxBatchedTokens, MaxTokens}, {"max_seqs", q.MaxSeqs, MaxUsers},
		{"requests_per_user", q.RequestsPerUser, maxRounds},
	}
	for _, f := range ints {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("%s: %d must be 0 (the default) to %d", f.name, f.v, f.max)
		}
	}
	// Each attention-DP rank of each worker is an engine to simulate.
	for _, f := range []struct {
		name     string
		dp, reps int
	}{{"dp x workers", q.DP, q.Workers}, {"prefill_dp x prefill_workers", q.PrefillDP, q.PrefillWorkers}, {"decode_dp x decode_workers", q.DecodeDP, q.DecodeWorkers}} {
		if max(f.dp, 1)*max(f.reps, 1) > maxParallel {
			return fmt.Errorf("%s: %d x %d engines; at most %d", f.name, max(f.dp, 1), max(f.reps, 1), maxParallel)
		}
	}
	switch {
	case q.ISL < 1 || q.ISL > MaxTokens:
		return fmt.Errorf("isl: %d must be 1 to %d tokens", q.ISL, MaxTokens)
	case q.OSL < 1 || q.OSL > MaxTokens:
		return fmt.Errorf("osl: %d must be 1 to %d tokens", q.OSL, MaxTokens)
	case q.Concurrency < 1 || q.Concurrency > MaxUsers:
		return fmt.Errorf("concurrency: %d must be 1 to %d users", q.Concurrency, MaxUsers)
	case math.IsNaN(q.GPUMemoryUtilization) || q.GPUMemoryUtilization < 0 || q.GPUMemoryUtilization > 1:
		return fmt.Errorf("gpu_memory_utilization: %g must be in (0, 1] (0: the backend's default)", q.GPUMemoryUtilization)
	}
	return perf.CheckSpec(q.SpecTokens, q.SpecAccept)
}
