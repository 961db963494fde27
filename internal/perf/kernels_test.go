package perf_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/perf/perftest"
)

func kernelWorker(t *testing.T, k *perftest.Kernels, tp int, dev catalog.Device) *perf.Worker {
	t.Helper()
	c := catalog.MustDefault()
	m, err := c.Model("Qwen/Qwen3-32B")
	if err != nil {
		t.Fatal(err)
	}
	p := perf.MustDefaultParams()
	if k != nil {
		p.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return k, nil, nil }
	}
	w, err := perf.NewWorker(perf.Config{Model: m, Device: dev, Backend: perf.VLLM, Weights: catalog.BF16, TP: tp, PP: 1}, p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// elementwise is the model's norms-and-activations time for tokens rows
// (priced on the roofline with or without tables).
func elementwise(w *perf.Worker, tokens float64) float64 {
	m, d := w.Config().Model, w.Config().Device
	fam := perf.MustDefaultParams().Families[d.GPU.Architecture]
	return float64(m.Layers) * tokens * 12 * float64(m.HiddenSize) * 2 / (d.BandwidthGBps() * 1e9 * fam.ElementwiseBandwidth)
}

func h100(t *testing.T) catalog.Device {
	g, err := catalog.MustDefault().GPU("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	return catalog.WholeDevice(g)
}

// The decode part of a step is the tables' attention per full layer: the
// affine fit recovers gamma, alpha and beta exactly from an affine table,
// and the step stays affine in the decode context with that slope.
func TestKernelsDecodeIsTheTablesAttention(t *testing.T) {
	// 2e-9 s per cached token of 4 KiB: 2 TB/s, 61% of the H100's bandwidth.
	k := &perftest.Kernels{GEMMSecs: 1e-15, CtxSecs: 1e-12, GenGamma: 5e-6, GenAlpha: 2e-7, GenBeta: 2e-9, ARSecs: 1e-12}
	w := kernelWorker(t, k, 1, h100(t))
	layers := float64(w.Config().Model.FullAttentionLayers())
	if got, want := w.DecodeCtxCost(), layers*2e-9; math.Abs(got-want) > 1e-6*want {
		t.Fatalf("decode context cost %g, want %g", got, want)
	}
	b1 := perf.Batch{DecodeSeqs: 8, DecodeCtx: 8000}
	b2 := perf.Batch{DecodeSeqs: 16, DecodeCtx: 8000}
	// Doubling the sequences at the same context adds layers*alpha*8 to
	// attention, and the GEMMs' growth from 8 to 16 rows.
	gemms := func(m float64) float64 {
		cfg := w.Config().Model
		hd, h, kv := float64(cfg.HeadDim), float64(cfg.AttentionHeads), float64(cfg.KVHeads)
		hid, in := float64(cfg.HiddenSize), float64(cfg.IntermediateSize)
		per := m*(h+2*kv)*hd*hid + m*hid*h*hd + m*2*in*hid + m*hid*in
		return float64(cfg.Layers) * 1e-15 * per
	}
	be := perf.MustDefaultParams().Backends[perf.VLLM]
	wantDelta := layers*2e-7*8 + gemms(16) - gemms(8) + be.PerSeqOverheadUs*1e-6*8 + elementwise(w, 8)
	if d := w.StepTime(b2) - w.StepTime(b1); math.Abs(d-wantDelta) > 1e-9*wantDelta+1e-12 {
		t.Errorf("step grows by %g from 8 to 16 sequences, want %g", d, wantDelta)
	}
	if k.Calls == 0 {
		t.Error("the tables were never asked")
	}
}

// A decode-attention table faster than the spec bandwidth, or slower than a
// quarter of it, fails the cross-check: decode attention then costs what the
// roofline says, while the tables still price the GEMMs.
func TestKernelsImplausibleDecodeKeepsRoofline(t *testing.T) {
	roof := kernelWorker(t, nil, 1, h100(t)).DecodeCtxCost()
	for _, beta := range []float64{3e-10, 2e-8} { // 13.7 TB/s; 0.2 TB/s, 6% of 3.35
		k := &perftest.Kernels{GEMMSecs: 1e-15, CtxSecs: 1e-12, GenGamma: 5e-6, GenAlpha: 2e-7, GenBeta: beta, ARSecs: 1e-12}
		w := kernelWorker(t, k, 1, h100(t))
		if got := w.DecodeCtxCost(); math.Abs(got-roof) > 1e-9*roof {
			t.Errorf("table beta %g: decode context cost %g, want the roofline's %g", beta, got, roof)
		}
		b := perf.Batch{DecodeSeqs: 8, DecodeCtx: 8000}
		if w.StepTime(b) >= kernelWorker(t, nil, 1, h100(t)).StepTime(b) {
			t.Errorf("table beta %g: the GEMM tables (near zero here) should still price the step", beta)
		}
	}
}

// Where the tables answer nothing, the roofline prices it exactly as
// without tables.
func TestKernelsFallBackToRoofline(t *testing.T) {
	b := perf.Batch{PrefillTokens: 2048, PrefillSeqs: 1, PrefillPairs: 2048 * 1024, DecodeSeqs: 4, DecodeCtx: 4000, Sampled: 5}
	plain := kernelWorker(t, nil, 1, h100(t)).StepTime(b)
	if got := kernelWorker(t, &perftest.Kernels{}, 1, h100(t)).StepTime(b); got != plain {
		t.Errorf("tables that answer nothing: %g, roofline %g", got, plain)
	}
}

// A MIG slice is priced from its whole GPU's tables scaled to its share:
// compute-bound prompt attention grows by the table's attention over the
// slice's share of the SMs.
func TestKernelsPriceASliceScaled(t *testing.T) {
	mig, err := catalog.MustDefault().Device("h100_sxm", "3g.40gb")
	if err != nil {
		t.Fatal(err)
	}
	k := &perftest.Kernels{GEMMSecs: 1e-18, CtxSecs: 1e-9, GenGamma: 1e-6, GenAlpha: 1e-7, GenBeta: 1e-10, ARSecs: 1e-12}
	w := kernelWorker(t, k, 1, mig)
	if k.Calls == 0 {
		t.Fatal("the slice's worker never asked the tables")
	}
	layers := float64(w.Config().Model.FullAttentionLayers())
	step := func(isl int) float64 {
		f := float64(isl)
		return w.StepTime(perf.Batch{PrefillTokens: isl, PrefillSeqs: 1, PrefillPairs: f * f / 2, Sampled: 1})
	}
	a1, a2 := step(1024), step(2048)
	want := layers*1e-9*(2048*2048-1024*1024)/mig.ComputeFraction + elementwise(w, 1024)
	if d := a2 - a1; d < want*(1-1e-9) || d > want*1.001 {
		t.Errorf("step grows by %g, want %g (the table's attention over a %.2f share, + GEMMs of 1e-18 s per MAC)", d, want, mig.ComputeFraction)
	}
}

// With tables, prefill attention follows them: four times the prompt
// pairs cost four times the table's attention (isl doubles).
func TestKernelsPrefillAttention(t *testing.T) {
	k := &perftest.Kernels{GEMMSecs: 1e-18, CtxSecs: 1e-9, GenGamma: 1e-6, GenAlpha: 1e-7, GenBeta: 1e-10, ARSecs: 1e-12}
	w := kernelWorker(t, k, 1, h100(t))
	layers := float64(w.Config().Model.FullAttentionLayers())
	step := func(isl int) float64 {
		f := float64(isl)
		return w.StepTime(perf.Batch{PrefillTokens: isl, PrefillSeqs: 1, PrefillPairs: f * f / 2, Sampled: 1})
	}
	a1, a2 := step(1024), step(2048)
	want := layers*1e-9*(2048*2048-1024*1024) + elementwise(w, 1024)
	if d := a2 - a1; d < want || d > want*1.001 {
		t.Errorf("step grows by %g, want %g (+ GEMMs of 1e-18 s per MAC)", d, want)
	}
}

// Tables that exist but cannot be read fail the worker that needs them,
// rather than leaving it on the roofline without a word.
func TestKernelsLoadErrorFailsTheWorker(t *testing.T) {
	c := catalog.MustDefault()
	m, err := c.Model("Qwen/Qwen3-32B")
	if err != nil {
		t.Fatal(err)
	}
	p := perf.MustDefaultParams()
	p.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) {
		return nil, nil, errors.New("gemm_perf.csv.gz line 7: bad")
	}
	_, err = perf.NewWorker(perf.Config{Model: m, Device: h100(t), Backend: perf.VLLM, TP: 1, PP: 1}, p)
	if err == nil || !strings.Contains(err.Error(), "kernel tables: gemm_perf.csv.gz line 7") {
		t.Errorf("got %v", err)
	}
}

// With measured tables, the MoE summary fitted to this GPU's table
// replaces the embedded one; without an answer, or with one slower than a
// served kernel streams (Plausible), the embedded one stays.
func TestKernelsMoESummaryFromTables(t *testing.T) {
	c := catalog.MustDefault()
	m, err := c.Model("Qwen/Qwen3-30B-A3B")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Device("h200_sxm", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := perf.Config{Model: m, Device: d, Backend: perf.VLLM, Weights: catalog.FP8, TP: 1}
	step := func(k *perftest.Kernels) float64 {
		p := perf.MustDefaultParams().Clone()
		if k != nil {
			p.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return k, nil, nil }
		}
		w, err := perf.NewWorker(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		return w.StepTime(perf.Batch{DecodeSeqs: 64, DecodeCtx: 64 * 1000, Sampled: 64})
	}
	embedded := step(nil)
	noMoE := step(&perftest.Kernels{})
	slow := step(&perftest.Kernels{MoEKernel: &perf.MoEKernel{Compute: 0.02, Bandwidth: 0.27, RowsHalf: 2, ParamsHalf: 1e6}})
	implausible := step(&perftest.Kernels{MoEKernel: &perf.MoEKernel{Compute: 0.05, Bandwidth: 0.1, RowsHalf: 2, ParamsHalf: 1e6}})
	if noMoE != embedded {
		t.Errorf("tables without a MoE answer: step %g s, want the embedded summary's %g s", noMoE, embedded)
	}
	if implausible != embedded {
		t.Errorf("a table's MoE kernel at a tenth of the bandwidth: step %g s, want the embedded summary's %g s", implausible, embedded)
	}
	// Only the table that gave way is noted.
	for name, tc := range map[string]struct {
		k    *perftest.Kernels
		note string
	}{
		"slow but plausible": {&perftest.Kernels{MoEKernel: &perf.MoEKernel{Compute: 0.02, Bandwidth: 0.27, RowsHalf: 2, ParamsHalf: 1e6}}, ""},
		"implausible":        {&perftest.Kernels{MoEKernel: &perf.MoEKernel{Compute: 0.05, Bandwidth: 0.1, RowsHalf: 2, ParamsHalf: 1e6}}, "streams expert weights at 10% of the bandwidth"},
		"no MoE answer":      {&perftest.Kernels{}, ""},
	} {
		p := perf.MustDefaultParams().Clone()
		p.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return tc.k, nil, nil }
		w, err := perf.NewWorker(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		if n := w.Notes(); (tc.note == "") != (len(n) == 0) || (tc.note != "" && !strings.Contains(n[0], tc.note)) {
			t.Errorf("%s: notes %q, want one saying %q", name, n, tc.note)
		}
	}
	if slow <= 2*embedded {
		t.Errorf("a table's slow MoE kernel gave %g s, the embedded one %g s: the table was not used", slow, embedded)
	}
}

// mlaWorker is DeepSeek-V3 in FP8 on eight H200s (tp 8) with fake tables.
func mlaWorker(t *testing.T, model string, k *perftest.Kernels) *perf.Worker {
	t.Helper()
	c := catalog.MustDefault()
	m, err := c.Model(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.GPU("h200_sxm")
	if err != nil {
		t.Fatal(err)
	}
	p := perf.MustDefaultParams()
	if k != nil {
		p.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return k, nil, nil }
	}
	w, err := perf.NewWorker(perf.Config{Model: m, Device: catalog.WholeDevice(g), Backend: perf.TRTLLM, Weights: catalog.FP8, KV: catalog.FP8, TP: 8, PP: 1}, p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// An MLA model's decode attention comes from the generation-MLA table:
// the affine fit recovers the table's terms, per MLA layer.
func TestKernelsMLADecodeFromTable(t *testing.T) {
	// 576 fp8 bytes of latent per cached token and layer in 2e-10 s:
	// 2.9 TB/s, 60% of the H200's bandwidth.
	const gamma, alpha, beta = 8e-6, 3e-7, 2e-10
	fake := func(g, a, b float64) *perftest.Kernels {
		return &perftest.Kernels{GenGamma: g, GenAlpha: a, GenBeta: b}
	}
	w := mlaWorker(t, "deepseek-ai/DeepSeek-V3", fake(gamma, alpha, beta))
	layers := float64(w.Config().Model.FullAttentionLayers())
	if got, want := w.DecodeCtxCost(), layers*beta; math.Abs(got-want) > 1e-6*want {
		t.Fatalf("decode context cost %g, want %g", got, want)
	}
	b := perf.Batch{DecodeSeqs: 16, DecodeCtx: 16 * 3000, Sampled: 16}
	// gamma and alpha: the same worker with either term zero differs by
	// it, per layer (and alpha per sequence).
	if d := w.StepTime(b) - mlaWorker(t, "deepseek-ai/DeepSeek-V3", fake(0, alpha, beta)).StepTime(b); math.Abs(d-layers*gamma) > 1e-6*layers*gamma {
		t.Errorf("gamma adds %g to a step, want %g", d, layers*gamma)
	}
	if d := w.StepTime(b) - mlaWorker(t, "deepseek-ai/DeepSeek-V3", fake(gamma, 0, beta)).StepTime(b); math.Abs(d-16*layers*alpha) > 1e-6*16*layers*alpha {
		t.Errorf("alpha adds %g to a step of 16, want %g", d, 16*layers*alpha)
	}
	// Faster than the spec bandwidth (28.8 TB/s): the roofline stays.
	roof := mlaWorker(t, "deepseek-ai/DeepSeek-V3", nil)
	if got := mlaWorker(t, "deepseek-ai/DeepSeek-V3", fake(gamma, alpha, 2e-11)).StepTime(b); got != roof.StepTime(b) {
		t.Errorf("implausible table: step %g, want the roofline's %g", got, roof.StepTime(b))
	}
	// Another latent than the tables' 512 + 64: the roofline stays.
	c := catalog.MustDefault()
	m, _ := c.Model("deepseek-ai/DeepSeek-V3")
	other := *m
	mla := *m.MLA
	mla.KVLoraRank = 256
	other.MLA = &mla
	g, _ := c.GPU("h200_sxm")
	mk := func(k *perftest.Kernels) *perf.Worker {
		p := perf.MustDefaultParams()
		if k != nil {
			p.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return k, nil, nil }
		}
		w, err := perf.NewWorker(perf.Config{Model: &other, Device: catalog.WholeDevice(g), Backend: perf.TRTLLM, Weights: catalog.FP8, KV: catalog.FP8, TP: 8, PP: 1}, p)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if got, want := mk(fake(gamma, alpha, beta)).DecodeCtxCost(), mk(nil).DecodeCtxCost(); got != want {
		t.Errorf("a 256-wide latent: decode context cost %g, want the roofline's %g", got, want)
	}
	// Sparse attention (DeepSeek-V3.2) reads top-k entries, not the whole
	// latent cache the table times: the roofline stays.
	sparse := mlaWorker(t, "deepseek-ai/DeepSeek-V3.2", fake(gamma, alpha, beta))
	if got, want := sparse.DecodeCtxCost(), mlaWorker(t, "deepseek-ai/DeepSeek-V3.2", nil).DecodeCtxCost(); got != want {
		t.Errorf("sparse MLA decode context cost %g, want the roofline's %g", got, want)
	}
}
