package serving

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
)

// BenchmarkDPEstimate times one attention-DP estimate (DeepSeek-R1 on 8
// B200 at dp 8, TensorRT-LLM, 256 users), with the plain iteration loop as
// the baseline.
func BenchmarkDPEstimate(b *testing.B) {
	w := perftest.Worker(b, "deepseek-ai/DeepSeek-R1", "b200_sxm",
		perf.Config{Backend: perf.TRTLLM, Weights: catalog.FP4, KV: catalog.FP8, TP: 1, DP: 8, EP: 8})
	wl := Workload{ISL: 1024, OSL: 1024, Concurrency: 256}
	for _, bc := range []struct {
		name string
		opt  Options
	}{{"fast-forward", Options{Harness: Burst}}, {"plain-loop", Options{Harness: Burst, PlainLoop: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Aggregated(w, 8, wl, bc.opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
