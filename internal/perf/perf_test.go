package perf

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// catalogWorker builds cfg for the catalog's model on gpu (and slice)
// under p; cfg gives everything else.
func catalogWorker(t *testing.T, model, gpu, slice string, cfg Config, p *Params) *Worker {
	t.Helper()
	c := catalog.MustDefault()
	m, err := c.Model(model)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Device(gpu, slice)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.Device = m, d
	w, err := NewWorker(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func worker(t *testing.T, model, gpu, slice string, prec catalog.Precision, tp int) *Worker {
	t.Helper()
	return catalogWorker(t, model, gpu, slice, Config{Backend: VLLM, Weights: prec, TP: tp}, MustDefaultParams())
}

func decodeStep(w *Worker, n, ctx int) float64 {
	return w.StepTime(Batch{DecodeSeqs: n, DecodeCtx: float64(n * ctx), Sampled: n})
}

func prefillStep(w *Worker, tokens int) float64 {
	t := float64(tokens)
	return w.StepTime(Batch{PrefillTokens: tokens, PrefillSeqs: 1, PrefillPairs: t * t / 2, Sampled: 1})
}

func TestStepTimeRelations(t *testing.T) {
	h100 := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 1)
	h100bf := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.BF16, 1)
	h200 := worker(t, "Qwen/Qwen3-32B", "h200_sxm", "", catalog.FP8, 1)
	tp2 := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 2)
	mig := worker(t, "Qwen/Qwen3-8B", "h100_sxm", "3g.40gb", catalog.FP8, 1)
	whole8 := worker(t, "Qwen/Qwen3-8B", "h100_sxm", "", catalog.FP8, 1)
	half := worker(t, "Qwen/Qwen3-8B", "rtx_pro_6000", "1/2", catalog.FP8, 1)
	full := worker(t, "Qwen/Qwen3-8B", "rtx_pro_6000", "", catalog.FP8, 1)
	tests := []struct {
		name       string
		small, big float64
		minRatio   float64
	}{
		{"decode grows with batch", decodeStep(h100, 1, 1000), decodeStep(h100, 64, 1000), 1.05},
		{"decode grows with context", decodeStep(h100, 32, 500), decodeStep(h100, 32, 8000), 1.2},
		{"fp8 decodes faster than bf16", decodeStep(h100, 8, 1000), decodeStep(h100bf, 8, 1000), 1.4},
		{"h200 bandwidth beats h100 in decode", decodeStep(h200, 8, 1000), decodeStep(h100, 8, 1000), 1.2},
		{"tp2 speeds up prefill", prefillStep(tp2, 8192), prefillStep(h100, 8192), 1.5},
		{"prefill is compute bound: 8k tokens cost far more than 1k", prefillStep(h100, 1024), prefillStep(h100, 8192), 6},
		{"MIG 3g slice is slower than the whole GPU", prefillStep(whole8, 4096), prefillStep(mig, 4096), 1.8},
		{"time-sliced half GPU takes nearly twice as long to decode (CPU overhead does not slice)", decodeStep(full, 8, 1000), decodeStep(half, 8, 1000), 1.6},
	}
	for _, tc := range tests {
		if tc.big < tc.small*tc.minRatio {
			t.Errorf("%s: %.3g ms vs %.3g ms, want a ratio >= %.2f", tc.name, tc.small*1e3, tc.big*1e3, tc.minRatio)
		}
	}
}

// TestStepTimeAffineInDecodeContext checks the property the engine's
// fast-forward relies on.
func TestStepTimeAffineInDecodeContext(t *testing.T) {
	for _, model := range []string{"Qwen/Qwen3-32B", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-120b", "Qwen/Qwen3-30B-A3B"} {
		w := worker(t, model, "b200_sxm", "", catalog.FP8, 8)
		for _, n := range []int{1, 7, 64, 300} {
			b := Batch{DecodeSeqs: n, Sampled: n, PrefillTokens: 100, PrefillSeqs: 1, PrefillPairs: 5000}
			b0, b1, b2 := b, b, b
			b1.DecodeCtx, b2.DecodeCtx = 1e5, 3e5
			t0, t1, t2 := w.StepTime(b0), w.StepTime(b1), w.StepTime(b2)
			if d := (t2 - t0) - 3*(t1-t0); math.Abs(d) > 1e-12 {
				t.Errorf("%s n=%d: step time is not affine in decode context (residual %g)", model, n, d)
			}
			if got := (t1 - t0) / 1e5; math.Abs(got-w.DecodeCtxCost()) > 1e-15 {
				t.Errorf("%s: slope %g, DecodeCtxCost %g", model, got, w.DecodeCtxCost())
			}
		}
	}
}

func TestMemoryPlan(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 1)
	m := w.Memory()
	// 32.8B parameters in fp8 plus bf16 embeddings: about 32 GiB.
	if m.WeightsGiB < 30 || m.WeightsGiB > 34 {
		t.Errorf("weights %.1f GiB", m.WeightsGiB)
	}
	if m.KVBytesPerToken != 262144 {
		t.Errorf("bf16 KV per token %g, want 262144", m.KVBytesPerToken)
	}
	tp2 := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 2).Memory()
	if tp2.KVBytesPerToken != m.KVBytesPerToken/2 || tp2.KVTokens < 2*m.KVTokens {
		t.Errorf("tp2 should halve KV per token and more than double capacity: %+v vs %+v", tp2, m)
	}
	mla := worker(t, "deepseek-ai/DeepSeek-V3", "b200_sxm", "", catalog.FP8, 8).Memory()
	if mla.KVBytesPerToken != 61*576*2 {
		t.Errorf("MLA latent cache is replicated per rank: got %g bytes/token", mla.KVBytesPerToken)
	}
}

func TestFitErrorNamesShortfallAndFix(t *testing.T) {
	w := worker(t, "meta-llama/Llama-3.1-70B", "h100_sxm", "", catalog.BF16, 1)
	err := w.CheckFit(4500)
	var fe *FitError
	if !errors.As(err, &fe) {
		t.Fatalf("70B bf16 on one H100 should not fit, got %v", err)
	}
	if fe.NeedGB <= fe.HaveGB {
		t.Fatalf("need %.1f GB should exceed have %.1f GB", fe.NeedGB, fe.HaveGB)
	}
	s := SuggestFit(w.Config(), MustDefaultParams(), catalog.MustDefault(), 4500)
	if !strings.Contains(s, "--tp 2") || !strings.Contains(s, "smallest fitting device") {
		t.Fatalf("suggestion %q should name tp 2 and a device", s)
	}
}

func TestConfigErrors(t *testing.T) {
	c := catalog.MustDefault()
	m, _ := c.Model("Qwen/Qwen3-32B")
	moe, _ := c.Model("Qwen/Qwen3-30B-A3B")
	slice, _ := c.Device("h100_sxm", "3g.40gb")
	h100, _ := c.Device("h100_sxm", "")
	gb200, _ := c.Device("gb200", "")
	l40s, _ := c.Device("l40s", "")
	kv6 := *m
	kv6.AttentionHeads, kv6.KVHeads = 48, 6
	p := MustDefaultParams()
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Model: m, Device: h100, TP: 3}, "must divide the model's 64 attention heads (tp 1, 2, 4, 8, 16, 32, 64)"},
		{Config{Model: &kv6, Device: h100, TP: 4}, "must divide the model's 6 KV heads"},
		{Config{Model: m, Device: l40s, TP: 16}, "exceeds the 8 GPUs"},
		{Config{Model: m, Device: gb200, TP: 128}, "whole domains"},
		{Config{Model: m, Device: slice, TP: 2}, "slices"},
		{Config{Model: m, Device: slice, DP: 2}, "slices"},
		{Config{Model: m, Device: h100, TP: 2, EP: 2}, "mixture-of-experts"},
		{Config{Model: moe, Device: h100, TP: 4, EP: 3}, "must divide tp x dp"},
		{Config{Model: moe, Device: h100, TP: 1, DP: 2000}, "dp: 2000"},
		{Config{Model: m, Device: h100, MemoryUtilization: 1.5}, "gpu-memory-utilization"},
	}
	for _, tc := range cases {
		_, err := NewWorker(tc.cfg, p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestParamsValidation(t *testing.T) {
	if _, err := ParseParams([]byte("version: 2\n"), "x"); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("wrong version: %v", err)
	}
	if _, err := ParseParams([]byte("version: 1\nbogus: 3\n"), "x"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown field: %v", err)
	}
	p := MustDefaultParams().Clone()
	p.Families[catalog.Hopper].GEMMBandwidth = 1.7
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "hopper.gemmBandwidth") {
		t.Errorf("out-of-range efficiency: %v", err)
	}
	for name, spoil := range map[string]func(p *Params){
		"stepOverheadMs":       func(p *Params) { p.Backends[VLLM].StepOverheadMs = 1e300 },
		"perSeqOverheadUs":     func(p *Params) { p.Backends[VLLM].PerSeqOverheadUs = math.NaN() },
		"reserveGiB":           func(p *Params) { p.Backends[SGLang].ReserveGiB = -1 },
		"networkGBps":          func(p *Params) { p.Comm.NetworkGBps = math.Inf(1) },
		"memoryUtilization":    func(p *Params) { p.Backends[TRTLLM].MemoryUtilization = math.NaN() },
		"hopper.gemm.fp8":      func(p *Params) { p.Families[catalog.Hopper].GEMM[catalog.FP8] = math.NaN() },
		"maxBatchedTokens":     func(p *Params) { p.Backends[VLLM].MaxBatchedTokens = 1 << 40 },
		"frontendOverheadMs":   func(p *Params) { p.Backends[VLLM].FrontendOverheadMs = -0.5 },
		"networkLatencyUs":     func(p *Params) { p.Comm.NetworkLatencyUs = 1e12 },
		"allReduceLatencyUs":   func(p *Params) { p.Backends[VLLM].AllReduceLatencyUs = math.Inf(1) },
		"attentionBandwidth":   func(p *Params) { p.Families[catalog.Ampere].AttentionBandwidth = math.NaN() },
		"reserveFullDeviceGiB": func(p *Params) { p.Backends[VLLM].ReserveFullDeviceGiB = math.NaN() },
		"moePromptFloorUs":     func(p *Params) { p.Backends[SGLang].MoEPromptFloorUs = -1 },
		"moeLayerUs":           func(p *Params) { p.Backends[VLLM].MoELayerUs = math.NaN() },
		"handoffMs":            func(p *Params) { p.Backends[SGLang].HandoffMs = -1 },
		"adpBalanceIters":      func(p *Params) { p.Backends[TRTLLM].ADPBalanceIters = 1 << 20 },
		"poolKnee":             func(p *Params) { p.Backends[VLLM].PoolKnee = 0.5 },
		"moeTtftFloorExpertUs": func(p *Params) { p.Backends[TRTLLM].MoETTFTFloorExpertUs = -2 },
		"frontendParallel":     func(p *Params) { p.Backends[SGLang].FrontendParallel = 1.5 },
		"poolKnee: NaN":        func(p *Params) { p.Backends[SGLang].PoolKnee = math.NaN() },
		"sparseIndexerUs.sglang": func(p *Params) {
			p.Families[catalog.Hopper].SparseIndexerUs = map[Backend]float64{SGLang: -1}
		},
		"sparsePrefill.vllm.pairPs": func(p *Params) {
			p.Families[catalog.Blackwell].SparsePrefill = map[Backend]*SparsePrefillCost{VLLM: {PairPs: math.NaN()}}
		},
		"sparsePrefill.sglang: empty": func(p *Params) {
			p.Families[catalog.Hopper].SparsePrefill = map[Backend]*SparsePrefillCost{SGLang: nil}
		},
		"sparseIndexerUs.tgi": func(p *Params) {
			p.Families[catalog.Blackwell].SparseIndexerUs = map[Backend]float64{"tgi": 40}
		},
		"gemmCallUs.fp8": func(p *Params) {
			p.Families[catalog.Hopper].GEMMCallUs = map[catalog.Precision]float64{catalog.FP8: -3}
		},
		"gemmCallUs.w4a16": func(p *Params) {
			p.Families[catalog.Hopper].GEMMCallUs = map[catalog.Precision]float64{catalog.W4A16: 3}
		},
		"gemmPrecisionBandwidth.fp9": func(p *Params) {
			p.Families[catalog.Hopper].GEMMPrecisionBandwidth = map[catalog.Precision]float64{"fp9": 0.5}
		},
		"gemmPrecisionBandwidth.fp4": func(p *Params) {
			p.Families[catalog.Blackwell].GEMMPrecisionBandwidth = map[catalog.Precision]float64{catalog.FP4: 1.3}
		},
	} {
		p := MustDefaultParams().Clone()
		spoil(p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), name) && !strings.Contains(err.Error(), "comm") && !strings.Contains(err.Error(), "maxSeqs") {
			t.Errorf("%s out of range: got %v", name, err)
		}
	}
}

func TestKVTransfer(t *testing.T) {
	p := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 2)
	d := worker(t, "Qwen/Qwen3-32B", "h100_sxm", "", catalog.FP8, 2)
	nv, net := KVTransferTime(4000, p, d, true), KVTransferTime(4000, p, d, false)
	if nv <= 0 || net < 3*nv {
		t.Errorf("NVLink transfer %.3g s should be far faster than the network's %.3g s", nv, net)
	}
	// The backend's fixed hand-off cost comes on top of the bytes, either way.
	params := MustDefaultParams().Clone()
	params.Backends[VLLM].HandoffMs = 40
	ph := catalogWorker(t, "Qwen/Qwen3-32B", "h100_sxm", "", Config{Backend: VLLM, Weights: catalog.FP8, TP: 2}, params)
	for _, same := range []bool{true, false} {
		if got, want := KVTransferTime(4000, ph, d, same), KVTransferTime(4000, p, d, same)+0.040; math.Abs(got-want) > 1e-12 {
			t.Errorf("same domain %v: hand-off %.6g s, want %.6g", same, got, want)
		}
	}
}

func TestSmallDeviceSchedulerDefaults(t *testing.T) {
	small := worker(t, "Qwen/Qwen3-8B", "l40s", "", catalog.FP8, 1).Config()
	big := worker(t, "Qwen/Qwen3-8B", "h100_sxm", "", catalog.FP8, 1).Config()
	if small.MaxBatchedTokens != 2048 || small.MaxSeqs != 256 {
		t.Errorf("vLLM on a 45 GiB GPU: %d tokens, %d seqs; want 2048 and 256", small.MaxBatchedTokens, small.MaxSeqs)
	}
	if big.MaxBatchedTokens != 8192 || big.MaxSeqs != 1024 {
		t.Errorf("vLLM on an 80 GiB GPU: %d tokens, %d seqs; want 8192 and 1024", big.MaxBatchedTokens, big.MaxSeqs)
	}
}

func TestReserveScalesWithDevice(t *testing.T) {
	be := MustDefaultParams().Backends[VLLM]
	prev := 0.0
	for _, gib := range []float64{4, 8, 12, 24, 48, 64, 80, 141} {
		r := be.ReserveGiBFor(gib)
		if r < prev || r > be.ReserveGiB || r < be.ReserveFloorGiB {
			t.Errorf("reserve on %g GiB = %.2f GiB: must grow with the device within [%g, %g]", gib, r, be.ReserveFloorGiB, be.ReserveGiB)
		}
		prev = r
	}
	if r := be.ReserveGiBFor(12); r > 0.1*12 {
		t.Errorf("a 12 GiB device keeps %.2f GiB in reserve; vLLM on such devices uses well under 10%%", r)
	}
	if r := be.ReserveGiBFor(80); r != be.ReserveGiB {
		t.Errorf("an 80 GiB GPU keeps %.2f GiB, want the full %g", r, be.ReserveGiB)
	}
}

// The AKS vGPU shares hold the small models in 4-bit weights, and the
// README's 8B example fits half an A10.
func TestSmallModelsFitA10Shares(t *testing.T) {
	for _, tc := range []struct {
		model, slice string
		prec         catalog.Precision
	}{
		{"Qwen/Qwen3-0.6B", "1/6", catalog.W4A16}, {"Qwen/Qwen3-1.7B", "1/6", catalog.W4A16},
		{"meta-llama/Llama-3.2-1B", "1/6", catalog.BF16}, {"Qwen/Qwen3-4B", "1/3", catalog.W4A16},
		{"meta-llama/Llama-3.2-3B", "1/3", catalog.W4A16}, {"Qwen/Qwen3-8B", "1/2", catalog.W4A16},
		{"Qwen/Qwen3-8B", "1/2", catalog.FP8},
	} {
		w := worker(t, tc.model, "a10", tc.slice, tc.prec, 1)
		if err := w.CheckFit(4500); err != nil {
			t.Errorf("%s %s on a10 %s: %v", tc.model, tc.prec, tc.slice, err)
		}
	}
	w := worker(t, "Qwen/Qwen3-8B", "a10", "1/6", catalog.W4A16, 1)
	if err := w.CheckFit(4500); err == nil {
		t.Error("Qwen3-8B fits a 4 GB share: its 4-bit weights alone need 4.8 GB")
	}
}

// Weight-only 4-bit streams a quarter of bf16's bytes at decode but
// computes prompts at the bf16 rate.
func TestW4A16IsWeightOnly(t *testing.T) {
	bf := worker(t, "Qwen/Qwen3-8B", "h100_sxm", "", catalog.BF16, 1)
	w4 := worker(t, "Qwen/Qwen3-8B", "h100_sxm", "", catalog.W4A16, 1)
	if r := decodeStep(bf, 1, 1000) / decodeStep(w4, 1, 1000); r < 2 || r > 4 {
		t.Errorf("bf16/w4a16 decode step ratio %.2f, want 2-4 (weights a quarter, embeddings and overheads unchanged)", r)
	}
	if r := prefillStep(bf, 8192) / prefillStep(w4, 8192); r < 0.9 || r > 1.1 {
		t.Errorf("bf16/w4a16 prefill ratio %.2f, want about 1: dequantised GEMMs run at bf16", r)
	}
	if w4.Memory().WeightsGiB > 0.45*bf.Memory().WeightsGiB {
		t.Errorf("w4a16 weights %.1f GiB against bf16 %.1f GiB", w4.Memory().WeightsGiB, bf.Memory().WeightsGiB)
	}
}

func TestWeightOnlyFormatIsNoCacheFormat(t *testing.T) {
	c := catalog.MustDefault()
	m, _ := c.Model("Qwen/Qwen3-8B")
	d, _ := c.Device("h100_sxm", "")
	_, err := NewWorker(Config{Model: m, Device: d, KV: catalog.W4A16}, MustDefaultParams())
	if err == nil || !strings.Contains(err.Error(), "kv_precision") {
		t.Errorf("w4a16 KV cache: got %v, want an error naming kv_precision", err)
	}
}

// Tensor parallelism need not be a power of two: it must split the heads
// and the KV heads (or replicate them) evenly, as engines require.
func TestTensorParallelNotPowerOfTwo(t *testing.T) {
	c := catalog.MustDefault()
	base, _ := c.Model("Qwen/Qwen3-32B")
	m := *base
	m.AttentionHeads, m.KVHeads = 48, 24 // head dim 128 kept
	h100, _ := c.Device("h100_sxm", "")
	var steps []float64
	for _, tp := range []int{4, 6, 8} {
		w, err := NewWorker(Config{Model: &m, Device: h100, Weights: catalog.FP8, TP: tp}, MustDefaultParams())
		if err != nil {
			t.Fatalf("tp %d: %v", tp, err)
		}
		steps = append(steps, decodeStep(w, 16, 2000))
	}
	if !(steps[0] > steps[1] && steps[1] > steps[2]) {
		t.Errorf("decode steps at tp 4, 6, 8: %.2f, %.2f, %.2f ms; want falling", steps[0]*1e3, steps[1]*1e3, steps[2]*1e3)
	}
}

// TestGEMMCallCost checks the per-call GEMM cost and the per-precision
// bandwidth the kernel-table fit sets: a decode step of one sequence pays
// the call cost once per dense GEMM of every layer, and the streaming
// bandwidth follows the compute precision.
func TestGEMMCallCost(t *testing.T) {
	const model, gpu = "Qwen/Qwen3-32B", "h100_sxm"
	base := MustDefaultParams().Clone()
	fam := base.Families[catalog.Hopper]
	fam.GEMMCallUs = nil
	fam.GEMMPrecisionBandwidth = nil
	cfg := Config{Backend: VLLM, Weights: catalog.FP8, TP: 1}
	w0 := catalogWorker(t, model, gpu, "", cfg, base)
	withCall := base.Clone()
	withCall.Families[catalog.Hopper].GEMMCallUs = map[catalog.Precision]float64{catalog.FP8: 10, catalog.BF16: 4}
	w1 := catalogWorker(t, model, gpu, "", cfg, withCall)
	layers := float64(w0.cfg.Model.Layers)
	// Four dense GEMMs a layer at the FP8 cost, and the BF16 output head.
	want := (4*layers*10 + 4) * 1e-6
	if got := decodeStep(w1, 1, 1000) - decodeStep(w0, 1, 1000); math.Abs(got-want) > 1e-9 {
		t.Errorf("call cost added %.4g s to a decode step, want %.4g s", got, want)
	}
	slower := base.Clone()
	slower.Families[catalog.Hopper].GEMMPrecisionBandwidth = map[catalog.Precision]float64{catalog.FP8: fam.GEMMBandwidth / 2}
	w2 := catalogWorker(t, model, gpu, "", cfg, slower)
	if r := decodeStep(w2, 1, 1000) / decodeStep(w0, 1, 1000); r < 1.4 {
		t.Errorf("halving FP8's streaming bandwidth slowed a one-sequence decode step by %.2fx, want most of 2x", r)
	}
	bf := catalogWorker(t, model, gpu, "", Config{Backend: VLLM, Weights: catalog.BF16, TP: 1}, slower)
	bf0 := catalogWorker(t, model, gpu, "", Config{Backend: VLLM, Weights: catalog.BF16, TP: 1}, base)
	if decodeStep(bf, 1, 1000) != decodeStep(bf0, 1, 1000) {
		t.Error("FP8's bandwidth changed a BF16 worker")
	}
}

// A parameter file with a key that an earlier gpuplane wrote and this one
// renamed is refused with what replaced it and how to convert the value;
// other unknown keys get the decoder's error alone.
func TestParseParamsRenamedKey(t *testing.T) {
	b, err := MustDefaultParams().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("moeTtftFloorExpertUs: %v", MustDefaultParams().Backends[TRTLLM].MoETTFTFloorExpertUs)
	old := strings.Replace(string(b), key, "moeTtftFloorUs: 2000", 1)
	if old == string(b) {
		t.Fatalf("the embedded parameters have no TensorRT-LLM %q to rename", key)
	}
	_, err = ParseParams([]byte(old), "old.yaml")
	if err == nil || !strings.Contains(err.Error(), `"moeTtftFloorUs"`) || !strings.Contains(err.Error(), "moeTtftFloorExpertUs replaced it") {
		t.Fatalf("old key: %v", err)
	}
	_, err = ParseParams([]byte(strings.Replace(string(b), key, "moeTtftFloorXUs: 12", 1)), "typo.yaml")
	if err == nil || !strings.Contains(err.Error(), `"moeTtftFloorXUs"`) || strings.Contains(err.Error(), "replaced it") {
		t.Fatalf("unknown key: %v", err)
	}
}

// TestFP4WithoutFP4TensorCoresIsNoted checks that fp4 weights on a GPU
// without fp4 tensor cores say what they were priced as, and on one with
// them say nothing.
func TestFP4WithoutFP4TensorCoresIsNoted(t *testing.T) {
	for _, tc := range []struct{ gpu, want string }{
		{"h100_sxm", "multiplied at fp8"},
		{"a100_sxm", "multiplied at bf16"},
		{"b200_sxm", ""},
	} {
		w := worker(t, "openai/gpt-oss-120b", tc.gpu, "", catalog.FP4, 1)
		got := strings.Join(w.Notes(), "\n")
		if tc.want == "" && strings.Contains(got, "fp4 tensor cores") || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: notes %q, want %q", tc.gpu, got, tc.want)
		}
	}
}
