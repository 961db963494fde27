package serving

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// The parallel share leaves a lone user's TTFT as it was and shortens a
// burst's wait in the API server.
func TestFrontendParallelShare(t *testing.T) {
	run := func(share float64, wl Workload, h Harness) *Result {
		p := perf.MustDefaultParams().Clone()
		p.Backends[perf.VLLM].FrontendParallel = share
		w := workerWith(t, "Qwen/Qwen3-32B", "h100_sxm", 1, p)
		if a, b := w.FrontendSplit(1000); math.Abs(a+b-w.FrontendTime(1000)) > 1e-15 || math.Abs(a-share*w.FrontendTime(1000)) > 1e-15 {
			t.Fatalf("share %g: split %g + %g of %g", share, a, b, w.FrontendTime(1000))
		}
		r, err := Aggregated(w, 1, wl, Options{Harness: h})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	lone := Workload{ISL: 1000, OSL: 100, Concurrency: 1}
	if a, b := run(0, lone, Steady), run(1, lone, Steady); math.Abs(a.TTFTms-b.TTFTms) > 1e-9 {
		t.Errorf("one user: TTFT %.3f ms all queued, %.3f ms all in parallel", a.TTFTms, b.TTFTms)
	}
	burst := Workload{ISL: 100, OSL: 100, Concurrency: 128}
	if a, b := run(0, burst, Burst), run(1, burst, Burst); b.TTFTms >= a.TTFTms {
		t.Errorf("a burst of 128: TTFT %.1f ms all queued, %.1f ms all in parallel", a.TTFTms, b.TTFTms)
	}
}
