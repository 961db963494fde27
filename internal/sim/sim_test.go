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

func newWorker(t testing.TB, tp, maxSeqs, budget int) *perf.Worker {
	t.Helper()
	return newWorkerWith(t, tp, maxSeqs, budget, perf.MustDefaultParams())
}

// engineOnly is a worker whose API server takes no time, so that the
// engine alone is the queue under test.
func engineOnly(t testing.TB, tp, maxSeqs, budget int) *perf.Worker {
	t.Helper()
	p := perf.MustDefaultParams()
	p.Backends[perf.VLLM].FrontendOverheadMs, p.Backends[perf.VLLM].FrontendPerTokenUs = 0, 0
	return newWorkerWith(t, tp, maxSeqs, budget, p)
}

func newWorkerWith(t testing.TB, tp, maxSeqs, budget int, p *perf.Params) *perf.Worker {
	t.Helper()
	c := catalog.MustDefault()
	m, _ := c.Model("Qwen/Qwen3-32B")
	d, _ := c.Device("h100_sxm", "")
	w, err := perf.NewWorker(perf.Config{Model: m, Device: d, Backend: perf.VLLM, Weights: catalog.FP8, TP: tp,
		MaxSeqs: maxSeqs, MaxBatchedTokens: budget}, p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func poisson(t testing.TB, rate float64, isl, osl int, dur float64, seed uint64) workload.Source {
	p, err := workload.NewPoisson(workload.Constant(rate), workload.Fixed{N: isl}, workload.Fixed{N: osl}, dur, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// agg is a deployment of replicas aggregated workers of w.
func agg(w *perf.Worker, replicas int) Config {
	return Config{Pools: []PoolSpec{{Name: "agg", Role: engine.Aggregated, Worker: w, Replicas: replicas}}}
}

// runAgg simulates replicas aggregated workers of w under src to the end.
func runAgg(t testing.TB, w *perf.Worker, replicas int, src workload.Source) *Summary {
	t.Helper()
	return runSim(t, agg(w, replicas), src)
}

func runSim(t testing.TB, cfg Config, src workload.Source) *Summary {
	t.Helper()
	s, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// An engine that takes one single-token request per iteration is an M/D/1
// queue: mean time in system = D + rho*D/(2(1-rho)).
func TestMD1(t *testing.T) {
	const isl = 512
	w := engineOnly(t, 1, 1, isl)
	d := w.StepTime(perf.Batch{PrefillTokens: isl, PrefillSeqs: 1, PrefillPairs: isl * isl / 2, Sampled: 1})
	for _, rho := range []float64{0.3, 0.6, 0.8} {
		sum := runAgg(t, w, 1, poisson(t, rho/d, isl, 1, 200000*d, 5))
		want := (d + rho*d/(2*(1-rho))) * 1e3
		if math.Abs(sum.E2EMeanms-want)/want > 0.05 {
			t.Errorf("rho %.1f: mean time in system %.2f ms, M/D/1 says %.2f ms", rho, sum.E2EMeanms, want)
		}
	}
}

func TestConservationAndDeterminism(t *testing.T) {
	run := func() *Summary {
		cfg := agg(newWorker(t, 1, 0, 0), 2)
		cfg.TTFTSLO, cfg.ITLSLO = 0.5, 0.03
		return runSim(t, cfg, poisson(t, 1.5, 2000, 300, 300, 11))
	}
	a, b := run(), run()
	if a.Requests == 0 || a.Completed+a.Unfinished+a.Rejected != a.Requests || a.Unfinished != 0 {
		t.Fatalf("requests %d = completed %d + unfinished %d + rejected %d", a.Requests, a.Completed, a.Unfinished, a.Rejected)
	}
	if a.TTFTMeanms != b.TTFTMeanms || a.GPUHours != b.GPUHours || len(a.Series) != len(b.Series) {
		t.Fatal("the same seed must reproduce the run")
	}
	arr := 0
	for _, p := range a.Series {
		arr += p.Arrivals
	}
	if arr != a.Requests {
		t.Fatalf("series counts %d arrivals, summary %d", arr, a.Requests)
	}
}

// Little's law on the open system: mean requests in flight = rate x time.
func TestDisaggLittlesLawAndScaling(t *testing.T) {
	p, d := newWorker(t, 1, 0, 0), newWorker(t, 2, 0, 0)
	s, err := New(Config{Pools: []PoolSpec{
		{Name: "prefill", Role: engine.Prefill, Worker: p, Replicas: 1, StartupDelay: 60},
		{Name: "decode", Role: engine.Decode, Worker: d, Replicas: 1, StartupDelay: 60}},
		KVTransfer: func(isl int) float64 { return perf.KVTransferTime(isl, p, d, true) }}, poisson(t, 2, 4000, 200, 600, 3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(100); err != nil {
		t.Fatal(err)
	}
	if err := s.Scale("prefill", 2, 100); err != nil {
		t.Fatal(err)
	}
	if s.Replicas("prefill") != 2 {
		t.Fatalf("prefill replicas %d after scale-up", s.Replicas("prefill"))
	}
	if _, err := s.Step(400); err != nil {
		t.Fatal(err)
	}
	if err := s.Scale("prefill", 1, 400); err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Unfinished != 0 || sum.Completed != sum.Requests {
		t.Fatalf("completed %d of %d", sum.Completed, sum.Requests)
	}
	// GPU-hours: prefill 1 GPU x run + 1 GPU x ~300 s, decode 2 GPUs x run.
	want := (sum.SimSeconds + 300 + 2*sum.SimSeconds) / 3600
	if math.Abs(sum.GPUHours-want)/want > 0.05 {
		t.Errorf("gpu hours %.3f, want about %.3f", sum.GPUHours, want)
	}
	if err := s.Scale("nope", 1, 0); err == nil {
		t.Error("unknown pool accepted")
	}
}

func TestConfigErrors(t *testing.T) {
	w := newWorker(t, 1, 0, 0)
	src := poisson(t, 1, 10, 10, 10, 1)
	if _, err := New(Config{Router: "random", Pools: []PoolSpec{{Name: "a", Role: engine.Aggregated, Worker: w}}}, src); err == nil {
		t.Error("unknown router accepted")
	}
	if _, err := New(Config{Pools: []PoolSpec{{Name: "p", Role: engine.Prefill, Worker: w}}}, src); err == nil {
		t.Error("prefill without decode accepted")
	}
}

// BenchmarkHourAt20RPS is one hour of 20 req/s (72,000 requests, 4000/500)
// on 16 workers.
func BenchmarkHourAt20RPS(b *testing.B) {
	w := newWorker(b, 1, 0, 0)
	for b.Loop() {
		sum := runAgg(b, w, 16, poisson(b, 20, 4000, 500, 3600, 1))
		b.ReportMetric(sum.SimSeconds, "sim-s/op")
	}
}

// A concurrency-driven run in steady state agrees with the closed-loop
// estimate for the same deployment and load.
func TestUsersAgreeWithEstimate(t *testing.T) {
	w := newWorker(t, 1, 0, 0)
	wl := serving.Workload{ISL: 2000, OSL: 300, Concurrency: 16}
	est, err := serving.Aggregated(w, 1, wl, serving.Options{})
	// Users start spread over about one request's lifetime, as in the
	// estimate's steady state.
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Pools: []PoolSpec{{Name: "agg", Role: engine.Aggregated, Worker: w, Replicas: 1}},
		Users: &Users{N: 16, ISL: workload.Fixed{N: 2000}, OSL: workload.Fixed{N: 300}, Duration: 600,
			Ramp: 6.5, Think: workload.Fixed{N: 1}, Rng: rand.New(rand.NewPCG(1, 1))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(sum.ITLMeanms-est.TPOTms) / est.TPOTms; d > 0.05 {
		t.Errorf("mean ITL %.2f ms vs estimate TPOT %.2f ms", sum.ITLMeanms, est.TPOTms)
	} else {
		t.Logf("mean ITL %.2f ms, estimate TPOT %.2f ms", sum.ITLMeanms, est.TPOTms)
	}
	if d := math.Abs(sum.TTFTMeanms-est.TTFTms) / est.TTFTms; d > 0.1 {
		t.Errorf("mean TTFT %.2f ms vs estimate %.2f ms", sum.TTFTMeanms, est.TTFTms)
	}
	if rps := float64(sum.Completed) / sum.SimSeconds; math.Abs(rps-est.RequestsPerS)/est.RequestsPerS > 0.05 {
		t.Errorf("throughput %.3f req/s vs estimate %.3f", rps, est.RequestsPerS)
	}
	// Little's law: users in the loop = completion rate x (time in system + think time).
	rate := float64(sum.Completed) / sum.SimSeconds
	if n := rate * (sum.E2EMeanms + 1) / 1e3; math.Abs(n-16)/16 > 0.05 {
		t.Errorf("Little's law: %.2f users in the loop, want 16", n)
	}
}

// At a load where requests never overlap, the API server adds exactly its
// service time to every TTFT.
func TestAPIServerTimeInTTFT(t *testing.T) {
	w := newWorker(t, 1, 0, 0)
	with := runAgg(t, w, 1, poisson(t, 0.01, 3000, 20, 20000, 7))
	without := runAgg(t, engineOnly(t, 1, 0, 0), 1, poisson(t, 0.01, 3000, 20, 20000, 7))
	if with.Completed < 100 || with.Completed != without.Completed {
		t.Fatalf("completed %d and %d", with.Completed, without.Completed)
	}
	want := w.FrontendTime(3000) * 1e3
	if want <= 0 {
		t.Fatal("the embedded vLLM API server takes no time; the test needs one that does")
	}
	if got := with.TTFTMeanms - without.TTFTMeanms; math.Abs(got-want) > 1e-6*want+1e-9 {
		t.Errorf("API server adds %.4f ms to the mean TTFT, want %.4f", got, want)
	}
}

// The API server is one thread: a burst leaves it one request per service
// time, in arrival order, and least-outstanding routing counts what it holds.
func TestAPIServerQueuesABurst(t *testing.T) {
	w := newWorker(t, 1, 0, 0)
	f := w.FrontendTime(1000)
	// n users, each sending at time zero, to replicas workers.
	burst := func(n, replicas int) Config {
		cfg := agg(w, replicas)
		cfg.Users = &Users{N: n, ISL: workload.Fixed{N: 1000}, OSL: workload.Fixed{N: 50}, Duration: 1,
			Rng: rand.New(rand.NewPCG(1, 1))}
		return cfg
	}
	s, err := New(burst(6, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	wk := s.agg.workers[0]
	for k := 0; k <= 6; k++ {
		// Just before the k+1-th request leaves the API server.
		if _, err := s.Step(float64(k)*f + f/2); err != nil {
			t.Fatal(err)
		}
		if got := wk.inFront; got != 6-k {
			t.Fatalf("at %.2f ms: %d requests in the API server, want %d", (float64(k)*f+f/2)*1e3, got, 6-k)
		}
		if got := wk.load() - wk.inFront + s.rec.completed; got != k {
			t.Fatalf("at %.2f ms: the engine has had %d requests, want %d", (float64(k)*f+f/2)*1e3, got, k)
		}
	}

	s, err = New(burst(8, 4), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(0); err != nil {
		t.Fatal(err)
	}
	for i, wk := range s.agg.workers {
		if wk.inFront != 2 {
			t.Errorf("worker %d's API server holds %d of 8 simultaneous requests, want 2", i, wk.inFront)
		}
	}
}

// With more users than decode slots, requests wait for a slot in their TTFT
// (the user's stream comes from the decode worker), in the simulator as in
// the estimate; the ITL stays the decode steps'.
func TestDisaggDecodeSlotWaitAgreesWithEstimate(t *testing.T) {
	p, d := newWorker(t, 1, 0, 0), newWorker(t, 1, 4, 0)
	transfer := func(isl int) float64 { return perf.KVTransferTime(isl, p, d, true) }
	wl := serving.Workload{ISL: 1000, OSL: 200, Concurrency: 16}
	est, err := serving.Disaggregated(serving.Disagg{Prefill: p, Decode: d, PrefillWorkers: 2, DecodeWorkers: 1, SameDomain: true}, wl, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Pools: []PoolSpec{
		{Name: "prefill", Role: engine.Prefill, Worker: p, Replicas: 2},
		{Name: "decode", Role: engine.Decode, Worker: d, Replicas: 1}},
		KVTransfer: transfer,
		Users: &Users{N: 16, ISL: workload.Fixed{N: 1000}, OSL: workload.Fixed{N: 200}, Duration: 600,
			Ramp: 3, Rng: rand.New(rand.NewPCG(1, 1))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if dev := math.Abs(sum.ITLMeanms-est.TPOTms) / est.TPOTms; dev > 0.1 {
		t.Errorf("mean ITL %.2f ms vs estimate TPOT %.2f ms", sum.ITLMeanms, est.TPOTms)
	}
	if dev := math.Abs(sum.TTFTMeanms-est.TTFTms) / est.TTFTms; dev > 0.15 {
		t.Errorf("mean TTFT %.0f ms vs estimate %.0f ms", sum.TTFTMeanms, est.TTFTms)
	}
	// Three of every four requests wait for a slot: most of the request time.
	if sum.TTFTMeanms < 2*200*est.TPOTms {
		t.Errorf("mean TTFT %.0f ms leaves out the wait for a decode slot (TPOT %.2f ms x 200 tokens)", sum.TTFTMeanms, est.TPOTms)
	}
}

// The simulator applies the model's TTFT floor to each request as the
// estimate does: a lone user of a TensorRT-LLM MoE worker sees the floor.
func TestTTFTFloorInSimulation(t *testing.T) {
	p := perf.MustDefaultParams().Clone()
	p.Backends[perf.TRTLLM].MoETTFTFloorExpertUs = 10
	w := perftest.Worker(t, "deepseek-ai/DeepSeek-R1", "b200_sxm", perf.Config{Backend: perf.TRTLLM, Weights: catalog.FP4, TP: 8, EP: 8}, p)
	est, err := serving.Aggregated(w, 1, serving.Workload{ISL: 1024, OSL: 64, Concurrency: 1}, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Pools: []PoolSpec{{Name: "agg", Role: engine.Aggregated, Worker: w, Replicas: 1}},
		Users: &Users{N: 1, ISL: workload.Fixed{N: 1024}, OSL: workload.Fixed{N: 64}, Duration: 60,
			Think: workload.Fixed{N: 1}, Rng: rand.New(rand.NewPCG(1, 1))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	floor := w.TTFTFloor() * 1e3
	if sum.Completed < 5 || math.Abs(sum.TTFTMeanms-floor) > 1e-6*floor || math.Abs(est.TTFTms-floor) > 1e-6*floor {
		t.Errorf("%d requests: mean TTFT %.2f ms, estimate %.2f ms, floor %.2f ms", sum.Completed, sum.TTFTMeanms, est.TTFTms, floor)
	}
}

// With all of the API server's time in parallel, a burst leaves it at
// once: six requests at time zero are all with the engine after one
// request's time.
func TestAPIServerInParallel(t *testing.T) {
	p := perf.MustDefaultParams().Clone()
	p.Backends[perf.VLLM].FrontendParallel = 1
	w := newWorkerWith(t, 1, 0, 0, p)
	f := w.FrontendTime(1000)
	cfg := agg(w, 1)
	cfg.Users = &Users{N: 6, ISL: workload.Fixed{N: 1000}, OSL: workload.Fixed{N: 50}, Duration: 1, Rng: rand.New(rand.NewPCG(1, 1))}
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	wk := s.agg.workers[0]
	if _, err := s.Step(f / 2); err != nil {
		t.Fatal(err)
	}
	if wk.inFront != 6 {
		t.Fatalf("halfway through: %d requests in the API server, want 6", wk.inFront)
	}
	if _, err := s.Step(f * 1.01); err != nil {
		t.Fatal(err)
	}
	if wk.inFront != 0 {
		t.Errorf("after one request's time: %d requests still in the API server, want 0", wk.inFront)
	}
}
