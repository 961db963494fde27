package serving

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
)

// tokenCost is a fixed part per iteration plus a part per token.
type tokenCost struct{ base, perToken float64 }

func (c tokenCost) FixedStepTime(b perf.Batch) float64 {
	return c.base + c.perToken*float64(b.PrefillTokens+b.DecodeSeqs)
}
func (c tokenCost) DecodeCtxCost() float64 { return 0 }

type times struct{ first, done map[int64]float64 }

func (s *times) FirstToken(r *engine.Request, t float64) { s.first[r.ID] = t }
func (s *times) Finished(r *engine.Request, t float64)   { s.done[r.ID] = t }

// addWorkers makes one group per worker of dp consecutive ranks (the last
// worker may have fewer), and leaves engines of dp 1 to step alone.
func TestAddWorkers(t *testing.T) {
	cfg := engine.Config{MaxBatchedTokens: 8, MaxSeqs: 1, KVTokens: 10}
	l := &loop{}
	es, err := l.addWorkers(cfg, 6, 1, 0, tokenCost{}, &times{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 6 || len(l.steppers) != 6 || l.steppers[2] != engine.Stepper(es[2]) || len(l.engines) != 6 {
		t.Errorf("dp 1: %d engines, %d steppers, want the 6 engines stepping alone", len(es), len(l.steppers))
	}
	l = &loop{}
	es, err = l.addWorkers(cfg, 7, 3, 0, tokenCost{}, &times{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 7 || len(l.steppers) != 3 {
		t.Fatalf("dp 3 over 7 engines: %d engines, %d steppers, want 7 and 3", len(es), len(l.steppers))
	}
	for w, st := range l.steppers[:2] {
		g, ok := st.(*engine.Lockstep)
		if !ok || g.Ranks() != 3 || g.Rank(0) != es[3*w] || g.Rank(2) != es[3*w+2] {
			t.Errorf("worker %d: %+v, want engines %d-%d", w, st, 3*w, 3*w+2)
		}
	}
	if l.steppers[2] != engine.Stepper(es[6]) {
		t.Errorf("the last worker's one rank should step alone, got %+v", l.steppers[2])
	}
}

// Attention-DP estimates come out the same whether the lockstep groups
// fast-forward or step every iteration: aggregated (with and without
// TensorRT-LLM's hold) and disaggregated pools with ranks of their own.
func TestDPFastForwardDoesNotChangeEstimates(t *testing.T) {
	newWorker := func(be perf.Backend, tp, dp int) *perf.Worker {
		return perftest.Worker(t, "deepseek-ai/DeepSeek-R1", "b200_sxm",
			perf.Config{Backend: be, Weights: catalog.FP4, KV: catalog.FP8, TP: tp, DP: dp, EP: tp * dp})
	}
	same := func(name string, ff, plain *Result) {
		t.Helper()
		for _, p := range [][2]float64{{ff.TTFTms, plain.TTFTms}, {ff.TPOTms, plain.TPOTms}, {ff.OutputTokensPerS, plain.OutputTokensPerS}} {
			if math.Abs(p[0]-p[1]) > 1e-6*math.Abs(p[1]) {
				t.Errorf("%s: fast-forward %v vs plain loop %v", name, p[0], p[1])
			}
		}
		if ff.Iterations != plain.Iterations {
			t.Errorf("%s: %d iterations with fast-forward, %d without", name, ff.Iterations, plain.Iterations)
		}
	}
	for _, be := range []perf.Backend{perf.TRTLLM, perf.VLLM} {
		w := newWorker(be, 1, 4)
		for _, wl := range []Workload{{1024, 256, 8}, {4000, 300, 96}, {1000, 1000, 300}} {
			for _, h := range Harnesses {
				ff, err := Aggregated(w, 4, wl, Options{Harness: h})
				if err != nil {
					t.Fatal(err)
				}
				plain, err := Aggregated(w, 4, wl, Options{Harness: h, PlainLoop: true})
				if err != nil {
					t.Fatal(err)
				}
				same(fmt.Sprintf("%s agg dp 4 %+v %s", be, wl, h), ff, plain)
			}
		}
		d := Disagg{Prefill: newWorker(be, 1, 4), Decode: newWorker(be, 1, 8), PrefillWorkers: 8, DecodeWorkers: 8, SameDomain: true}
		wl := Workload{ISL: 2000, OSL: 400, Concurrency: 128}
		ff, err := Disaggregated(d, wl, Options{Harness: Burst})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := Disaggregated(d, wl, Options{Harness: Burst, PlainLoop: true})
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("%s disagg 2 x dp 4 / dp 8", be), ff, plain)
	}
}
