package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
	"github.com/gpuplane/gpuplane/internal/serving"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// A worker of attention-DP ranks in the simulator is the estimate's: its
// ranks share the users and step together (with TensorRT-LLM's balance
// hold), so users on it see the estimate's latencies; it is billed for
// all its GPUs.
func TestAttentionDPUsersAgreeWithEstimate(t *testing.T) {
	const dp, users, isl, osl = 4, 32, 1000, 200
	for _, be := range []perf.Backend{perf.VLLM, perf.TRTLLM} {
		w := perftest.Worker(t, "deepseek-ai/DeepSeek-R1", "b200_sxm",
			perf.Config{Backend: be, Weights: catalog.FP4, KV: catalog.FP8, TP: 1, EP: dp, DP: dp})
		est, err := serving.Aggregated(w, dp, serving.Workload{ISL: isl, OSL: osl, Concurrency: users}, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Pools: []PoolSpec{{Name: "agg", Role: engine.Aggregated, Worker: w, Replicas: 1}},
			Users: &Users{N: users, ISL: workload.Fixed{N: isl}, OSL: workload.Fixed{N: osl}, Duration: 300,
				Ramp: 4, Rng: rand.New(rand.NewPCG(1, 1))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: mean ITL %.2f ms (estimate %.2f), TTFT %.1f ms (estimate %.1f)", be, sum.ITLMeanms, est.TPOTms, sum.TTFTMeanms, est.TTFTms)
		if r := sum.ITLMeanms / est.TPOTms; math.Abs(r-1) > 0.05 {
			t.Errorf("%s: mean ITL %.2f ms vs estimate TPOT %.2f ms", be, sum.ITLMeanms, est.TPOTms)
		}
		if r := sum.TTFTMeanms / est.TTFTms; math.Abs(r-1) > 0.25 {
			t.Errorf("%s: mean TTFT %.1f ms vs estimate %.1f ms", be, sum.TTFTMeanms, est.TTFTms)
		}
		wk := s.pools[0].workers[0]
		if len(wk.ranks) != dp {
			t.Fatalf("%s: the worker has %d engines, want its %d ranks", be, len(wk.ranks), dp)
		}
		for i, e := range wk.ranks {
			if e.Iterations == 0 {
				t.Errorf("%s: rank %d never ran: requests are not spread over the ranks", be, i)
			}
		}
		if want := float64(dp) * sum.SimSeconds / 3600; math.Abs(sum.GPUHours-want) > 1e-9*want {
			t.Errorf("%s: %.4f GPU-hours, want %.4f (%d GPUs for %.0f s)", be, sum.GPUHours, want, dp, sum.SimSeconds)
		}
	}
}
