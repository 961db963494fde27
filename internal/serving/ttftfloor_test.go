package serving

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
)

// floorWorker is DeepSeek-R1 on 8 B200 under TensorRT-LLM with a TTFT
// floor of us per routed expert of each MoE layer.
func floorWorker(t *testing.T, us float64) *perf.Worker {
	p := perf.MustDefaultParams().Clone()
	p.Backends[perf.TRTLLM].MoETTFTFloorExpertUs = us
	return perftest.Worker(t, "deepseek-ai/DeepSeek-R1", "b200_sxm", perf.Config{Backend: perf.TRTLLM, Weights: catalog.FP4, TP: 8, EP: 8}, p)
}

// The floor bounds each request's TTFT from below and leaves the engine's
// work alone: a lone user's TTFT is the floor, its TPOT unchanged; under a
// burst of long prompts, where queueing outlasts the floor, the TTFT rises
// by less than the floor (a bound, not a cost added on top).
func TestTTFTFloorBoundsTTFT(t *testing.T) {
	none, with := floorWorker(t, 0), floorWorker(t, 10)
	floor := with.TTFTFloor() * 1e3
	run := func(w *perf.Worker, wl Workload, opt Options) *Result {
		r, err := Aggregated(w, 1, wl, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	lone := Workload{ISL: 1024, OSL: 256, Concurrency: 1}
	a, b := run(none, lone, Options{}), run(with, lone, Options{})
	if a.TTFTms >= floor || math.Abs(b.TTFTms-floor) > 1e-9*floor || b.TPOTms != a.TPOTms || b.TTFTFloorMs != floor || a.TTFTFloorMs != 0 {
		t.Errorf("one user: TTFT %.1f ms with a %.1f ms floor (%.1f without), TPOT %.3f / %.3f ms, reported floor %.1f / %.1f",
			b.TTFTms, floor, a.TTFTms, b.TPOTms, a.TPOTms, b.TTFTFloorMs, a.TTFTFloorMs)
	}
	burst := Workload{ISL: 8192, OSL: 256, Concurrency: 64}
	a, b = run(none, burst, Options{Harness: Burst}), run(with, burst, Options{Harness: Burst})
	if d := b.TTFTms - a.TTFTms; d < 0 || d >= floor || b.TPOTms != a.TPOTms || b.RequestsPerS != a.RequestsPerS {
		t.Errorf("burst: TTFT %.1f ms with the floor, %.1f without (+%.1f, floor %.1f); TPOT %.3f / %.3f; rate %.3f / %.3f",
			b.TTFTms, a.TTFTms, d, floor, b.TPOTms, a.TPOTms, b.RequestsPerS, a.RequestsPerS)
	}
	dis, err := Disaggregated(Disagg{Prefill: with, Decode: with, PrefillWorkers: 1, DecodeWorkers: 1}, lone, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dis.TTFTms < floor-1e-9 || dis.TTFTFloorMs != floor {
		t.Errorf("disaggregated, one user: TTFT %.1f ms under the %.1f ms floor (reported %.1f)", dis.TTFTms, floor, dis.TTFTFloorMs)
	}
}
