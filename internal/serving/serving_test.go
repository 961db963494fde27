package serving

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

func worker(t testing.TB, model, gpu string, tp int) *perf.Worker {
	t.Helper()
	return workerWith(t, model, gpu, tp, perf.MustDefaultParams())
}

// workerWith is worker under other parameters.
func workerWith(t testing.TB, model, gpu string, tp int, params *perf.Params) *perf.Worker {
	t.Helper()
	c := catalog.MustDefault()
	m, _ := c.Model(model)
	d, err := c.Device(gpu, "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := perf.NewWorker(perf.Config{Model: m, Device: d, Backend: perf.VLLM, Weights: catalog.FP8, TP: tp}, params)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Little's law on the closed loop: users = throughput x time in system.
func TestLittlesLaw(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	for _, c := range []int{1, 8, 32} {
		r, err := Aggregated(w, 1, Workload{ISL: 2000, OSL: 300, Concurrency: c}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		inSystem := r.RequestsPerS * r.E2Ems / 1e3
		if math.Abs(inSystem-float64(c))/float64(c) > 0.03 {
			t.Errorf("concurrency %d: throughput x latency = %.2f users", c, inSystem)
		}
	}
}

func TestConcurrencyTradeoff(t *testing.T) {
	w := worker(t, "meta-llama/Llama-3.1-8B", "h200_sxm", 1)
	var prev *Result
	for _, c := range []int{1, 4, 16, 64} {
		r, err := Aggregated(w, 1, Workload{ISL: 1024, OSL: 256, Concurrency: c}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && (r.OutputTokensPerS <= prev.OutputTokensPerS || r.TPOTms <= prev.TPOTms) {
			t.Errorf("c=%d: throughput %.0f (was %.0f) and TPOT %.2f (was %.2f) should both rise",
				c, r.OutputTokensPerS, prev.OutputTokensPerS, r.TPOTms, prev.TPOTms)
		}
		prev = r
	}
}

// A single user sees no batching: TTFT is one prefill, TPOT one decode step.
func TestSingleUserMatchesStepTimes(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	isl, osl := 2000, 200
	r, err := Aggregated(w, 1, Workload{ISL: isl, OSL: osl, Concurrency: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	prefill := w.StepTime(perf.Batch{PrefillTokens: isl, PrefillSeqs: 1, PrefillPairs: float64(isl) * float64(isl) / 2, Sampled: 1})
	wantTTFT := (prefill + w.FrontendTime(isl)) * 1e3
	if math.Abs(r.TTFTms-wantTTFT) > 1e-6*wantTTFT {
		t.Errorf("TTFT %.4f ms, want %.4f", r.TTFTms, wantTTFT)
	}
	mid := w.StepTime(perf.Batch{DecodeSeqs: 1, DecodeCtx: float64(isl + osl/2), Sampled: 1}) * 1e3
	if math.Abs(r.TPOTms-mid) > 1e-3*mid {
		t.Errorf("TPOT %.4f ms, want the mid-context step %.4f", r.TPOTms, mid)
	}
}

func TestDeterministic(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 2)
	a, _ := Aggregated(w, 2, Workload{ISL: 3000, OSL: 400, Concurrency: 48}, Options{Harness: Queued})
	b, _ := Aggregated(w, 2, Workload{ISL: 3000, OSL: 400, Concurrency: 48}, Options{Harness: Queued})
	if *a.Memory != *b.Memory || a.TTFTms != b.TTFTms || a.TPOTms != b.TPOTms || a.OutputTokensPerS != b.OutputTokensPerS {
		t.Fatalf("two identical runs differ: %+v vs %+v", a, b)
	}
}

func TestBenchmarkBurstRaisesTTFT(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	wl := Workload{ISL: 4000, OSL: 300, Concurrency: 24}
	steady, _ := Aggregated(w, 1, wl, Options{})
	bench, _ := Aggregated(w, 1, wl, Options{Harness: Burst})
	if bench.TTFTms <= steady.TTFTms*1.2 {
		t.Errorf("opening burst should raise mean TTFT: steady %.1f, benchmark %.1f", steady.TTFTms, bench.TTFTms)
	}
	if math.Abs(bench.OutputTokensPerS-steady.OutputTokensPerS) > 1e-9 {
		t.Errorf("throughput is the steady state's in both modes")
	}
}

func TestDisaggregated(t *testing.T) {
	p := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	d := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	wl := Workload{ISL: 4000, OSL: 500, Concurrency: 64}
	one, err := Disaggregated(Disagg{Prefill: p, Decode: d, PrefillWorkers: 1, DecodeWorkers: 2, SameDomain: true}, wl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	two, err := Disaggregated(Disagg{Prefill: p, Decode: d, PrefillWorkers: 2, DecodeWorkers: 2, SameDomain: true}, wl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if two.TTFTms >= one.TTFTms {
		t.Errorf("a second prefill worker should cut TTFT: %.1f -> %.1f ms", one.TTFTms, two.TTFTms)
	}
	if one.GPUs != 3 || two.GPUs != 4 || one.KVTransferMs <= 0 {
		t.Errorf("gpus %d/%d, transfer %.3f ms", one.GPUs, two.GPUs, one.KVTransferMs)
	}
	if inSystem := one.RequestsPerS * one.E2Ems / 1e3; math.Abs(inSystem-64)/64 > 0.05 {
		t.Errorf("Little's law in disagg: %.1f users in system", inSystem)
	}
}

func TestWorkloadValidation(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-8B", "h100_sxm", 1)
	for _, wl := range []Workload{{0, 10, 1}, {10, 0, 1}, {10, 10, 0}} {
		if _, err := Aggregated(w, 1, wl, Options{}); err == nil {
			t.Errorf("%+v accepted", wl)
		}
	}
}

// The closed-form fast-forward must not change any estimate.
func TestFastForwardDoesNotChangeEstimates(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 2)
	for _, wl := range []Workload{{4000, 500, 32}, {1000, 200, 7}, {8000, 100, 64}} {
		for _, h := range Harnesses {
			ff, err := Aggregated(w, 2, wl, Options{Harness: h})
			if err != nil {
				t.Fatal(err)
			}
			plain, err := Aggregated(w, 2, wl, Options{Harness: h, PlainLoop: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range [][2]float64{{ff.TTFTms, plain.TTFTms}, {ff.TPOTms, plain.TPOTms}, {ff.OutputTokensPerS, plain.OutputTokensPerS}} {
				if math.Abs(p[0]-p[1]) > 1e-6*math.Abs(p[1]) {
					t.Fatalf("%+v harness %s: fast-forward %v vs plain loop %v", wl, h, p[0], p[1])
				}
			}
			if ff.Iterations != plain.Iterations {
				t.Fatalf("iteration counts differ: %d vs %d", ff.Iterations, plain.Iterations)
			}
		}
	}
}

// BenchmarkAggregatedEstimate times one steady-state estimate of the
// reference scenario, with the plain iteration loop as the baseline.
func BenchmarkAggregatedEstimate(b *testing.B) {
	w := worker(b, "Qwen/Qwen3-32B", "h100_sxm", 1)
	wl := Workload{ISL: 4000, OSL: 500, Concurrency: 32}
	for _, bc := range []struct {
		name string
		opt  Options
	}{{"fast-forward", Options{}}, {"plain-loop", Options{PlainLoop: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Aggregated(w, 1, wl, bc.opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A request waiting for a decode slot waits in its TTFT: the user's stream
// comes from the decode worker. Its TPOT is the decode steps alone.
func TestDecodeSlotWaitIsInTTFT(t *testing.T) {
	c := catalog.MustDefault()
	m, _ := c.Model("Qwen/Qwen3-32B")
	dev, err := c.Device("h100_sxm", "")
	if err != nil {
		t.Fatal(err)
	}
	p := worker(t, "Qwen/Qwen3-32B", "h100_sxm", 1)
	d, err := perf.NewWorker(perf.Config{Model: m, Device: dev, Backend: perf.VLLM, Weights: catalog.FP8, TP: 1, MaxSeqs: 4}, perf.MustDefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	dep := Disagg{Prefill: p, Decode: d, PrefillWorkers: 2, DecodeWorkers: 1, SameDomain: true}
	const osl = 200
	fits, err := Disaggregated(dep, Workload{ISL: 1000, OSL: osl, Concurrency: 4}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := Disaggregated(dep, Workload{ISL: 1000, OSL: osl, Concurrency: 16}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Four slots run four at a time either way.
	if math.Abs(queued.TPOTms-fits.TPOTms)/fits.TPOTms > 0.1 {
		t.Errorf("TPOT with 16 users on 4 decode slots = %.2f ms, want about the %.2f ms of 4 users: the wait for a slot is not decoding", queued.TPOTms, fits.TPOTms)
	}
	// Each request waits about three requests' decoding for its slot.
	if wait := queued.TTFTms - fits.TTFTms; wait < 2*osl*fits.TPOTms {
		t.Errorf("TTFT with 16 users on 4 decode slots = %.0f ms, only %.0f ms above 4 users' (%.2f ms TPOT x %d tokens a request)", queued.TTFTms, wait, fits.TPOTms, osl)
	}
	// The result says how much of the TTFT is that wait. With a slot free,
	// a request waits at most for the step in progress to end.
	if fits.DecodeWaitMs > fits.TPOTms {
		t.Errorf("4 users on 4 decode slots wait %.1f ms for one, more than a %.1f ms step", fits.DecodeWaitMs, fits.TPOTms)
	}
	if wait := queued.TTFTms - fits.TTFTms; math.Abs(queued.DecodeWaitMs-wait) > 0.1*wait {
		t.Errorf("decode wait %.0f ms, want about the %.0f ms the TTFT grew by", queued.DecodeWaitMs, wait)
	}
}
