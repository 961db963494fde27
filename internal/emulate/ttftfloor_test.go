package emulate

import (
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
)

// A TensorRT-LLM MoE worker holds each first token until its TTFT floor,
// as the estimate and the simulator charge it, and delivers every token:
// a long request streams on from there, a one-token request that finished
// earlier ends at the floor. A decode worker holds nothing.
func TestTTFTFloorHoldsFirstToken(t *testing.T) {
	p := perf.MustDefaultParams().Clone()
	p.Backends[perf.TRTLLM].MoETTFTFloorExpertUs = 10
	w := perftest.Worker(t, "deepseek-ai/DeepSeek-R1", "b200_sxm", perf.Config{Backend: perf.TRTLLM, Weights: catalog.FP4, TP: 8, EP: 8}, p)
	floor := time.Duration(w.TTFTFloor() * float64(time.Second))
	run := func(role engine.Role, osl ...int) ([]time.Duration, []int) {
		clk := &fakeClock{t: time.Unix(0, 0)}
		rec := &ttftRecorder{}
		rt, err := NewRealtime(w, role, clk.now, rec)
		if err != nil {
			t.Fatal(err)
		}
		chans := make([]<-chan int, len(osl))
		for i, n := range osl {
			if chans[i], err = rt.Submit(1024, n, "length"); err != nil {
				t.Fatal(err)
			}
		}
		got, open := make([]int, len(osl)), len(osl)
		for step := 0; open > 0 && step < 200000; step++ {
			clk.add(100 * time.Microsecond)
			rt.advance()
			for i, c := range chans {
			drain:
				for c != nil {
					select {
					case n, ok := <-c:
						if !ok {
							chans[i], c = nil, nil
							open--
							break drain
						}
						got[i] = n
					default:
						break drain
					}
				}
			}
		}
		if open > 0 {
			t.Fatalf("%d requests still open", open)
		}
		return rec.ttfts, got
	}
	ttfts, got := run(engine.Aggregated, 64, 1)
	if len(ttfts) != 2 || got[0] != 64 || got[1] != 1 {
		t.Fatalf("first tokens %v, tokens delivered %v: want 2 and 64, 1", ttfts, got)
	}
	for i, d := range ttfts {
		if d < floor || d > floor+200*time.Microsecond {
			t.Errorf("request %d: TTFT %v, want the floor %v", i, d, floor)
		}
	}
	if d, _ := run(engine.Decode, 64); d[0] >= floor {
		t.Errorf("decode worker: TTFT %v, held for the %v floor", d[0], floor)
	}
}
