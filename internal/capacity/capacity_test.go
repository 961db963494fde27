package capacity

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/serving"
)

func model(t testing.TB, decodeTP int) *Model { return specModel(t, decodeTP, 0, 0) }

// specModel is model with speculative decoding (k drafted tokens, mean
// acceptance a) on the decode workers.
func specModel(t testing.TB, decodeTP, k int, a float64) *Model {
	c := catalog.MustDefault()
	m, _ := c.Model("Qwen/Qwen3-32B")
	d, _ := c.Device("h100_sxm", "")
	pw, err := perf.NewWorker(perf.Config{Model: m, Device: d, Weights: catalog.FP8, TP: 1}, perf.MustDefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	dw, err := perf.NewWorker(perf.Config{Model: m, Device: d, Weights: catalog.FP8, TP: decodeTP, SpecTokens: k, SpecAccept: a}, perf.MustDefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	cm, err := New(pw, dw, true)
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// The analytic rates agree with the engine loop: the decode rate at the
// ITL matches a decode-only run at that batch, and the prefill latency at
// low load matches a one-user prefill run.
func TestAgreesWithEngineLoop(t *testing.T) {
	cm := model(t, 4)
	checkDecodeAgrees(t, cm)
	one, err := serving.PrefillOnly(cm.Prefill, serving.Workload{ISL: 4000, OSL: 2, Concurrency: 1}, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	transfer := perf.KVTransferTime(4000, cm.Prefill, cm.Decode, true) * 1e3
	if got := cm.PrefillTTFT(4000, 0, 0); math.Abs(got-transfer-one.TTFTms)/one.TTFTms > 0.02 {
		t.Errorf("prefill: analytic %.1f ms (with %.1f ms hand-off), engine loop %.1f ms", got, transfer, one.TTFTms)
	}
}

// Under speculative decoding the ITL is a step over the tokens it gains,
// in the analytic model as in the engine loop.
func TestSpeculativeDecodeAgreesWithEngineLoop(t *testing.T) {
	spec, plain := specModel(t, 4, 3, 2.5), model(t, 4)
	if a, b := spec.DecodeITL(4000, 500, 1), plain.DecodeITL(4000, 500, 1); a > b/2 {
		t.Errorf("one request: %.2f ms a token speculative, %.2f ms plain; want under half at 2.5 tokens a step", a, b)
	}
	checkDecodeAgrees(t, spec)
}

// checkDecodeAgrees compares the decode rate at a 30 ms ITL with a
// decode-only engine run at the batch it came from.
func checkDecodeAgrees(t *testing.T, cm *Model) {
	t.Helper()
	isl, osl := 4000.0, 500.0
	rate := cm.DecodeRate(isl, osl, 30)
	// The batch the rate came from: the largest inside the ITL.
	batch := 0
	for b := 1; b < 1024; b++ {
		if cm.DecodeITL(isl, osl, float64(b)) > 30 {
			batch = b - 1
			break
		}
	}
	run, err := serving.DecodeOnly(cm.Decode, serving.Workload{ISL: int(isl), OSL: int(osl), Concurrency: batch}, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(run.RequestsPerS-rate)/rate > 0.05 {
		t.Errorf("decode: analytic %.2f req/s at batch %d, engine loop %.2f", rate, batch, run.RequestsPerS)
	}
	if itl := cm.DecodeITL(isl, osl, float64(batch)); math.Abs(run.TPOTms-itl)/itl > 0.05 {
		t.Errorf("decode: analytic ITL %.2f ms at batch %d, engine loop %.2f", itl, batch, run.TPOTms)
	}
}

func TestMonotone(t *testing.T) {
	cm := model(t, 1)
	if !(cm.PrefillRate(4000, 400, 0) < cm.PrefillRate(4000, 800, 0) && cm.PrefillRate(1000, 500, 0) > cm.PrefillRate(4000, 500, 0)) {
		t.Error("prefill rate must grow with the TTFT budget and shrink with the prompt")
	}
	if cm.PrefillRate(4000, 100, 0) != 0 {
		t.Error("a budget below one prompt's latency allows no rate")
	}
	if !(cm.DecodeITL(4000, 500, 8) < cm.DecodeITL(4000, 500, 64)) || cm.DecodeRate(4000, 500, 5) != 0 {
		t.Error("decode ITL grows with batch; an ITL below one step allows no rate")
	}
	if !math.IsInf(cm.PrefillTTFT(4000, 100, 0), 1) {
		t.Error("past saturation the TTFT is unbounded")
	}
}

// BenchmarkTick is one planner decision on the performance model, as the
// live planner and the simulator make it.
func BenchmarkTick(b *testing.B) {
	p, err := planner.New(planner.Config{TTFTms: 500, ITLms: 30, Predictor: "arima", StartupDelay: 90}, model(b, 4))
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		p.Tick(planner.Observation{Time: float64(30 * i), Interval: 30, Requests: 200 + i%50, MeanISL: 3800, MeanOSL: 480,
			TTFTms: 180, ITLms: 18, Prefill: 2, Decode: 1})
	}
}

// A replica of attention-DP ranks spreads its requests over them: its
// decode rate is its ranks' rates, checked against the engine loop of the
// replica's ranks at the batch each holds, and its prefill TTFT at the
// rate it says it takes is the target.
func TestAttentionDPReplica(t *testing.T) {
	const dp = 4
	w := perftest.Worker(t, "deepseek-ai/DeepSeek-R1", "b200_sxm",
		perf.Config{Backend: perf.SGLang, Weights: catalog.FP4, KV: catalog.FP8, TP: 1, EP: dp, DP: dp})
	cm, err := New(w, w, true)
	if err != nil {
		t.Fatal(err)
	}
	isl, osl, itl := 2000.0, 400.0, 40.0
	rate := cm.DecodeRate(isl, osl, itl)
	// The most a rank holds inside the ITL; the replica holds dp times it.
	perRank := 0
	for b := 1; b < 4096; b++ {
		if cm.DecodeITL(isl, osl, float64(dp*b)) > itl {
			perRank = b - 1
			break
		}
	}
	if perRank < 1 {
		t.Fatalf("no batch inside %.0f ms", itl)
	}
	run, err := serving.DecodeOnly(w, serving.Workload{ISL: int(isl), OSL: int(osl), Concurrency: dp * perRank}, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := run.RequestsPerS; math.Abs(rate-want)/want > 0.05 {
		t.Errorf("decode: %.2f req/s for the replica, the engine loop of its %d ranks %.2f req/s at %d a rank", rate, dp, want, perRank)
	}
	for _, pct := range []float64{0, 90} {
		r := cm.PrefillRate(isl, 800, pct)
		if got := cm.PrefillTTFT(isl, r, pct); math.Abs(got-800) > 8 {
			t.Errorf("prefill p%.0f: TTFT %.1f ms at the %.2f req/s said to hold 800 ms", pct, got, r)
		}
		if one := cm.PrefillTTFT(isl, r/dp, pct); one >= cm.PrefillTTFT(isl, r, pct) {
			t.Errorf("prefill p%.0f: a quarter of the rate gives %.1f ms, no less than the full rate", pct, one)
		}
	}
}
