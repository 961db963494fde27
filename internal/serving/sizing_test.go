package serving

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// decodeStep is a decode iteration of b sequences at the workload's mean context.
func decodeStep(w *perf.Worker, wl Workload, b int) float64 {
	ctx := float64(wl.ISL) + float64(wl.OSL)/2
	return w.StepTime(perf.Batch{DecodeSeqs: b, DecodeCtx: float64(b) * ctx, Sampled: b})
}

// h200Pools are Qwen3-32B prefill (tp 1) and decode (tp 2) workers on H200.
func h200Pools(t testing.TB) (prefill, decode *perf.Worker) {
	return worker(t, "Qwen/Qwen3-32B", "h200_sxm", 1), worker(t, "Qwen/Qwen3-32B", "h200_sxm", 2)
}

// The sizing against a brute-force oracle: the fewest decode engines whose
// batch stays resident and within the knee (scanned batch by batch), and
// the fewest prefill engines whose rate covers the request rate.
// Each knee is tried: the built-in one and factors either side of it.
func TestPoolSizesMatchOracle(t *testing.T) {
	for _, k := range []float64{0, 1.5, 8} {
		params := perf.MustDefaultParams().Clone()
		params.Backends[perf.VLLM].PoolKnee = k
		pre := workerWith(t, "Qwen/Qwen3-32B", "h100_sxm", 1, params)
		dec := workerWith(t, "Qwen/Qwen3-32B", "h100_sxm", 2, params)
		if want := map[bool]float64{true: perf.DefaultPoolKnee, false: k}[k == 0]; dec.PoolKnee() != want {
			t.Fatalf("knee %g: the worker's is %g, want %g", k, dec.PoolKnee(), want)
		}
		poolSizesMatchOracle(t, pre, dec)
	}
}

func poolSizesMatchOracle(t *testing.T, pre, dec *perf.Worker) {
	t.Helper()
	for _, wl := range []Workload{
		{ISL: 4000, OSL: 500, Concurrency: 1},
		{ISL: 4000, OSL: 500, Concurrency: 200},
		{ISL: 1000, OSL: 1000, Concurrency: 64},
		{ISL: 20000, OSL: 200, Concurrency: 30},
		{ISL: 128, OSL: 2000, Concurrency: 900},
	} {
		pe, de, err := PoolSizes(pre, dec, wl, 0)
		if err != nil {
			t.Fatal(err)
		}
		dc := dec.Config()
		resident := min(dc.MaxSeqs, dec.Memory().KVTokens/(wl.ISL+wl.OSL))
		knee := 1
		for b := 1; b <= resident; b++ {
			if decodeStep(dec, wl, b) <= dec.PoolKnee()*decodeStep(dec, wl, 1) {
				knee = b
			}
		}
		wantDe := 1
		for (wl.Concurrency+wantDe-1)/wantDe > knee {
			wantDe++
		}
		if de != wantDe {
			t.Errorf("%+v: %d decode engines, oracle %d (knee %d, resident %d)", wl, de, wantDe, knee, resident)
		}
		perPrompt, rate := prefillRate(pre, wl.ISL, wl.Concurrency)
		b := (wl.Concurrency + de - 1) / de
		demand := float64(wl.Concurrency) / (perPrompt + float64(wl.OSL-1)*decodeStep(dec, wl, b))
		wantPe := 1
		for float64(wantPe)*rate < demand*(1-1e-9) {
			wantPe++
		}
		if pe != wantPe {
			t.Errorf("%+v: %d prefill engines, oracle %d (demand %.2f/s, %.2f/s an engine)", wl, pe, wantPe, demand, rate)
		}
	}
}

func TestPoolSizesGrowWithUsers(t *testing.T) {
	pre := worker(t, "Qwen/Qwen3-32B", "h200_sxm", 1)
	dec := worker(t, "Qwen/Qwen3-32B", "h200_sxm", 4)
	lastP, lastD := 0, 0
	for _, c := range []int{1, 8, 64, 256, 1024, 4096} {
		pe, de, err := PoolSizes(pre, dec, Workload{ISL: 4000, OSL: 500, Concurrency: c}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if pe < lastP || de < lastD {
			t.Errorf("%d users: %dP+%dD, fewer than %dP+%dD for fewer users", c, pe, de, lastP, lastD)
		}
		lastP, lastD = pe, de
	}
	if lastP < 2 || lastD < 2 {
		t.Errorf("4,096 users of 4000/500 tokens on %dP+%dD: the pools did not grow", lastP, lastD)
	}
}

// A given decode pool is kept and the prefill pool sized against it: a
// bigger decode pool runs smaller batches, faster steps, more requests/s.
func TestPoolSizesKeepGivenDecode(t *testing.T) {
	pre, dec := h200Pools(t)
	wl := Workload{ISL: 4000, OSL: 500, Concurrency: 512}
	p1, d1, err := PoolSizes(pre, dec, wl, 1)
	if err != nil {
		t.Fatal(err)
	}
	p8, d8, err := PoolSizes(pre, dec, wl, 8)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != 1 || d8 != 8 {
		t.Fatalf("given 1 and 8 decode engines, got %d and %d", d1, d8)
	}
	if p8 <= p1 {
		t.Errorf("prefill engines for 8 decode engines (%d) should exceed those for 1 (%d)", p8, p1)
	}
}

// The sized deployment serves its users without the prefill queue that one
// prefill and one decode engine build at the same concurrency.
func TestSizedPoolsBeatOneAndOne(t *testing.T) {
	pre, dec := h200Pools(t)
	wl := Workload{ISL: 4000, OSL: 500, Concurrency: 200}
	pe, de, err := PoolSizes(pre, dec, wl, 0)
	if err != nil {
		t.Fatal(err)
	}
	sized, err := Disaggregated(Disagg{Prefill: pre, Decode: dec, PrefillWorkers: pe, DecodeWorkers: de}, wl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := Disaggregated(Disagg{Prefill: pre, Decode: dec, PrefillWorkers: 1, DecodeWorkers: 1}, wl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pe < 2 || sized.TTFTms > one.TTFTms/2 || sized.OutputTokensPerS < one.OutputTokensPerS {
		t.Errorf("%dP+%dD: TTFT %.0f ms, %.0f tok/s; 1P+1D: %.0f ms, %.0f tok/s", pe, de, sized.TTFTms, sized.OutputTokensPerS,
			one.TTFTms, one.OutputTokensPerS)
	}
}

func TestPoolSizesRejectsBadWorkload(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-8B", "h100_sxm", 1)
	if _, _, err := PoolSizes(w, w, Workload{ISL: 0, OSL: 10, Concurrency: 1}, 0); err == nil {
		t.Error("isl 0 accepted")
	}
}

// BenchmarkPoolSizes times the sizing a disaggregated query without worker
// counts adds, beside the disaggregated run it precedes (the baseline).
func BenchmarkPoolSizes(b *testing.B) {
	pre, dec := h200Pools(b)
	wl := Workload{ISL: 4000, OSL: 500, Concurrency: 200}
	pe, de, err := PoolSizes(pre, dec, wl, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("size", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := PoolSizes(pre, dec, wl, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("disaggregated-run", func(b *testing.B) {
		for b.Loop() {
			if _, err := Disaggregated(Disagg{Prefill: pre, Decode: dec, PrefillWorkers: pe, DecodeWorkers: de}, wl, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A higher knee packs more users into each decode engine, until the
// engine's cache holds no more.
func TestPoolKneeSizesDecode(t *testing.T) {
	wl := Workload{ISL: 1000, OSL: 1000, Concurrency: 900}
	var last int
	for i, k := range []float64{1.5, 3.5, 8} {
		params := perf.MustDefaultParams().Clone()
		params.Backends[perf.VLLM].PoolKnee = k
		pre := workerWith(t, "Qwen/Qwen3-32B", "h100_sxm", 1, params)
		dec := workerWith(t, "Qwen/Qwen3-32B", "h100_sxm", 2, params)
		_, de, err := PoolSizes(pre, dec, wl, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && de >= last || i == 2 && de > last {
			t.Errorf("knee %g: %d decode engines against %d at a lower knee", k, de, last)
		}
		last = de
	}
}
