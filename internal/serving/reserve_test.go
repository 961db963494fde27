package serving

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// A backend that reserves each request's whole cache at admission holds
// fewer long requests at once than one that allocates as tokens come: the
// rest queue (TTFT holds the wait) and those running decode in a smaller
// batch (lower TPOT), where the other admits them all and evicts later.
// Llama-3.1-70B on one H200 with 1,024 + 8,192 tokens for 64 users is such
// a load: TensorRT-LLM measures TTFT in tens of seconds there.
func TestReserveFullRequestQueuesUsers(t *testing.T) {
	wl := Workload{ISL: 1024, OSL: 8192, Concurrency: 64}
	run := func(full bool) *Result {
		p := perf.MustDefaultParams().Clone()
		p.Backends[perf.VLLM].ReserveFullRequest = full
		w := workerWith(t, "meta-llama/Llama-3.1-70B", "h200_sxm", 1, p)
		if w.ReservesFullRequest() != full {
			t.Fatalf("worker reserves full requests: %v, want %v", w.ReservesFullRequest(), full)
		}
		r, err := Aggregated(w, 1, wl, Options{Harness: Burst})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	onDemand, reserved := run(false), run(true)
	if held := reserved.Memory.KVTokens / (wl.ISL + wl.OSL); held >= wl.Concurrency {
		t.Fatalf("the cache holds %d whole requests; the test needs fewer than %d", held, wl.Concurrency)
	}
	if reserved.TTFTms < 5*onDemand.TTFTms || reserved.TPOTms >= onDemand.TPOTms {
		t.Errorf("reserving: TTFT %.0f ms, TPOT %.1f ms; allocating on demand: %.0f ms, %.1f ms; want TTFT far higher and TPOT lower",
			reserved.TTFTms, reserved.TPOTms, onDemand.TTFTms, onDemand.TPOTms)
	}
}
