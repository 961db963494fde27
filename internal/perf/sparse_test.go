package perf

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// DeepSeek sparse attention against the same model with dense MLA: the
// cache also holds the indexer's keys, a decode step's context cost is the
// indexer's and each sequence reads only its top k, and long prompts cost
// less attention; the engine windows prompt pairs at k.
func TestSparseAttentionAgainstDense(t *testing.T) {
	c := catalog.MustDefault()
	sparse, err := c.Model("deepseek-ai/DeepSeek-V3.2")
	if err != nil {
		t.Fatal(err)
	}
	dense := *sparse
	dense.Sparse = nil
	d, _ := c.Device("h200_sxm", "")
	// The roofline terms alone: the indexer's measured kernels (their own
	// tests below) cost more than the FLOPs saved, which the tables show.
	p := MustDefaultParams().Clone()
	p.Families[catalog.Hopper].SparseIndexerUs, p.Families[catalog.Hopper].SparsePrefill = nil, nil
	mk := func(m *catalog.Model) *Worker {
		w, err := NewWorker(Config{Model: m, Device: d, Backend: SGLang, Weights: catalog.FP8, KV: catalog.FP8, TP: 8}, p)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	sw, dw := mk(sparse), mk(&dense)
	if got, want := sw.Memory().KVBytesPerToken-dw.Memory().KVBytesPerToken, 61*(128+4.0); math.Abs(got-want) > 1e-9 {
		t.Errorf("indexer cache %g bytes per token per GPU, want %g", got, want)
	}
	if sw.AttentionWindow() != 2048 || dw.AttentionWindow() != 0 {
		t.Errorf("attention windows %d and %d, want 2048 and 0", sw.AttentionWindow(), dw.AttentionWindow())
	}
	if sw.DecodeCtxCost() >= dw.DecodeCtxCost()/4 {
		t.Errorf("context cost per token %.3g s (sparse) against %.3g s (dense): the indexer should be far cheaper", sw.DecodeCtxCost(), dw.DecodeCtxCost())
	}
	// At 64k of context the top-k read is a small part of the dense read;
	// at 1k (under k) sparse is priced as if the context were k.
	long, short := 65536, 1024
	if s, dd := decodeStep(sw, 32, long), decodeStep(dw, 32, long); s >= dd {
		t.Errorf("decode at %d context: sparse %.2f ms, dense %.2f ms", long, s*1e3, dd*1e3)
	}
	if s, dd := decodeStep(sw, 32, short), decodeStep(dw, 32, short); s < dd {
		t.Errorf("decode at %d context: sparse %.2f ms under dense %.2f ms", short, s*1e3, dd*1e3)
	}
	// A 32k prompt: attention over 2048 keys a query plus the indexer.
	n := 32768
	b := Batch{PrefillTokens: n, PrefillSeqs: 1, PrefillPairs: float64(n) * float64(n) / 2, Sampled: 1}
	b.PrefillSlidingPairs = 2048*float64(n) - 2048*2048/2.0
	if s, dd := sw.StepTime(b), dw.StepTime(b); s >= dd {
		t.Errorf("a %d-token prompt: sparse %.1f ms, dense %.1f ms", n, s*1e3, dd*1e3)
	}
}

// The indexer's fixed cost: every iteration of a sparse model pays it once
// per sparse layer, prompt or decode, under the backend it was measured
// for; a dense model and another backend pay nothing.
func TestSparseIndexerCost(t *testing.T) {
	c := catalog.MustDefault()
	sparse, err := c.Model("deepseek-ai/DeepSeek-V3.2")
	if err != nil {
		t.Fatal(err)
	}
	dense, err := c.Model("deepseek-ai/DeepSeek-V3")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := c.Device("h200_sxm", "")
	with := func(us float64) *Params {
		p := MustDefaultParams().Clone()
		p.Families[catalog.Hopper].SparseIndexerUs = map[Backend]float64{SGLang: us}
		return p
	}
	mk := func(m *catalog.Model, be Backend, p *Params) *Worker {
		w, err := NewWorker(Config{Model: m, Device: d, Backend: be, Weights: catalog.FP8, KV: catalog.FP8, TP: 8}, p)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	prompt := Batch{PrefillTokens: 1024, PrefillSeqs: 1, PrefillPairs: 1024 * 1024 / 2, Sampled: 1}
	for _, b := range []Batch{DecodeBatch(8, 1024), prompt} {
		base, cost := mk(sparse, SGLang, with(0)).StepTime(b), mk(sparse, SGLang, with(100)).StepTime(b)
		if got, want := cost-base, float64(sparse.FullAttentionLayers())*100e-6; math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: the indexer added %.4f ms, want %.4f (100 us on each of %d layers)", b, got*1e3, want*1e3, sparse.FullAttentionLayers())
		}
		if x, y := mk(dense, SGLang, with(0)).StepTime(b), mk(dense, SGLang, with(100)).StepTime(b); x != y {
			t.Errorf("dense MLA paid an indexer: %.4f -> %.4f ms", x*1e3, y*1e3)
		}
		if x, y := mk(sparse, VLLM, with(0)).StepTime(b), mk(sparse, VLLM, with(100)).StepTime(b); x != y {
			t.Errorf("vLLM paid SGLang's indexer: %.4f -> %.4f ms", x*1e3, y*1e3)
		}
	}
}

// The prompt side: an iteration with prompt tokens pays the call, the
// tokens and the causal pairs under the top-k window on every sparse layer
// (split over pipeline stages like the other per-token work); a decode
// step pays none of it.
func TestSparsePrefillCost(t *testing.T) {
	c := catalog.MustDefault()
	m, err := c.Model("zai-org/GLM-5")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := c.Device("b200_sxm", "")
	cost := &SparsePrefillCost{CallUs: 100, TokenUs: 0.5, PairPs: 20}
	mk := func(with bool, pp int) *Worker {
		p := MustDefaultParams().Clone()
		p.Families[catalog.Blackwell].SparsePrefill = nil
		if with {
			p.Families[catalog.Blackwell].SparsePrefill = map[Backend]*SparsePrefillCost{TRTLLM: cost}
		}
		w, err := NewWorker(Config{Model: m, Device: d, Backend: TRTLLM, Weights: catalog.FP8, KV: catalog.FP8, TP: 8 / pp, PP: pp}, p)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	layers := float64(m.FullAttentionLayers())
	prompt := Batch{PrefillTokens: 4096, PrefillSeqs: 1, PrefillPairs: 4096 * 4097 / 2, PrefillSlidingPairs: 2048*2049/2 + 2048*2048, Sampled: 1}
	for _, pp := range []int{1, 2} {
		got := mk(true, pp).StepTime(prompt) - mk(false, pp).StepTime(prompt)
		want := layers * (100e-6 + (0.5e-6*4096+20e-12*prompt.PrefillSlidingPairs)/float64(pp))
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("pp %d: a 4096-token prompt paid %.4f ms, want %.4f", pp, got*1e3, want*1e3)
		}
	}
	if x, y := mk(false, 1).StepTime(DecodeBatch(16, 2048)), mk(true, 1).StepTime(DecodeBatch(16, 2048)); x != y {
		t.Errorf("a decode step paid the prompt side: %.4f -> %.4f ms", x*1e3, y*1e3)
	}
}
