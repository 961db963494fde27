package perf

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// Kernels prices single operations on one whole GPU under one backend from
// measured kernel tables, in seconds; ok is false where they have no answer.
type Kernels interface {
	GEMM(dtype string, m, n, k float64) (secs float64, ok bool)
	ContextAttention(attnDtype, kvDtype string, headDim, window int, heads, kvHeads, isl, batch float64) (float64, bool)
	GenerationAttention(kvDtype string, headDim, window int, heads, kvHeads, batch, kvLen float64) (float64, bool)
	AllReduce(gpus, elems float64) (float64, bool)
	// GenerationMLA is one absorbed-MLA decode step (the attention core) of
	// batch sequences over kvLen cached tokens with heads per GPU.
	GenerationMLA(kvDtype string, heads, batch, kvLen float64) (float64, bool)
	// MoE is the fused-MoE kernel summary fitted to this GPU's and
	// backend's table at a weight precision (nil: none measured).
	MoE(w catalog.Precision) (*MoEKernel, error)
}

// KernelSource finds the tables that price a catalog GPU under a backend:
// its own (on nil or gpu), or those of the measured GPU on of the same
// architecture and compute capability, which the model scales to gpu. A nil
// Kernels means none; an error, tables that exist but cannot be read.
type KernelSource func(gpu *catalog.GPU, b Backend) (k Kernels, on *catalog.GPU, err error)

// opModel prices an iteration's operations from measured kernels for the
// models whose layers it can describe: dense attention (no MLA); routed
// experts and sliding-window layers keep the roofline.
type opModel struct {
	k                 Kernels
	wDtype, kvDtype   string
	ctxDtype          string
	headDim           float64
	heads, kvHeads    float64 // per GPU
	qkvN, oK, upN, dK float64 // GEMM widths per GPU
	hidden, vocabN    float64
	// decode is the table's decode attention per full-attention layer, nil
	// where the table fails the bandwidth cross-check and decode attention
	// stays on the roofline.
	decode *decodeFit

	mu    sync.Mutex
	dense map[int]layerCost // per-layer GEMM and all-reduce time by tokens
}

// gemmDtype names the table a weight precision's GEMMs are measured in.
func gemmDtype(p catalog.Precision) string {
	switch p {
	case catalog.FP8:
		return "fp8"
	case catalog.FP4:
		return "nvfp4"
	case catalog.INT8:
		return "sq"
	case catalog.W4A16:
		return "int4_wo"
	}
	return "bfloat16"
}

func kvDtype(p catalog.Precision) string {
	if p == catalog.FP8 {
		return "fp8"
	}
	return "bfloat16"
}

// newOpModel sets up kernel pricing, or returns nil when the tables do not
// cover this configuration (the roofline then prices everything).
func newOpModel(w *Worker) *opModel {
	cfg := w.cfg
	if !tablesPrice(w) || cfg.Model.MLA != nil || cfg.Model.Linear != nil || cfg.Model.Sparse != nil {
		return nil
	}
	k := w.tables
	m := cfg.Model
	o := &opModel{k: k, wDtype: gemmDtype(cfg.Weights), kvDtype: kvDtype(cfg.KV), ctxDtype: "bfloat16",
		headDim: float64(m.HeadDim), heads: float64(m.AttentionHeads) / w.tp, kvHeads: math.Max(1, float64(m.KVHeads)/w.tp),
		hidden: float64(m.HiddenSize), dense: map[int]layerCost{}}
	if cfg.Backend == TRTLLM && o.kvDtype == "fp8" {
		o.ctxDtype = "fp8" // TensorRT-LLM runs FMHA in fp8 over an fp8 cache
	}
	o.qkvN = (o.heads + 2*o.kvHeads) * o.headDim
	o.oK = o.heads * o.headDim
	o.upN = 2 * float64(m.IntermediateSize) / w.tp
	o.dK = float64(m.IntermediateSize) / w.tp
	o.vocabN = float64(m.VocabSize) / w.tp
	// Probe: the tables must answer this model's shapes, or none is used.
	if _, ok := k.GEMM(o.wDtype, 64, o.qkvN, o.hidden); !ok {
		return nil
	}
	if _, ok := o.ctxAttention(1024, 1); !ok {
		return nil
	}
	o.decode = tableDecode(w, func(b, s float64) (float64, bool) {
		return k.GenerationAttention(o.kvDtype, int(o.headDim), 0, o.heads, o.kvHeads, b, s)
	})
	return o
}

// tablesPrice says whether kernel tables price w's operations: some cover
// its device (directly or scaled, see tablesFor), and it runs one pipeline
// stage (stages keep the roofline).
func tablesPrice(w *Worker) bool { return w.tables != nil && w.cfg.PP == 1 }

// Decode attention streams the KV cache: per cached token it cannot beat
// the spec sheet's bandwidth (with the 1.25x slack the row filter allows),
// and a kernel engines serve with does not run below a quarter of it. The
// tables break both bounds on whole systems: TensorRT-LLM's Blackwell tables
// grow with query heads rather than KV heads (GQA models 4-8x slower than
// the fitted roofline), and others price wide-head shapes, extrapolated,
// above the spec bandwidth. Such a table keeps decode attention on the
// roofline; its GEMMs and prefill attention are still used.
const (
	decodeFastest = 1.25
	decodeSlowest = slowestServed
)

// slowestServed is the least share of memory bandwidth a kernel that
// engines serve with streams its operands at.
const slowestServed = 0.25

// DecodePlausible says whether decode attention taking secsPerToken per
// cached token of bytesPerToken streams within the bounds above of bw.
func DecodePlausible(secsPerToken, bytesPerToken, bw float64) bool {
	if !(secsPerToken > 0) || !(bw > 0) {
		return false
	}
	rate := bytesPerToken / secsPerToken
	return rate <= decodeFastest*bw && rate >= decodeSlowest*bw
}

func (o *opModel) ctxAttention(isl, batch float64) (float64, bool) {
	t, ok := o.k.ContextAttention(o.ctxDtype, o.kvDtype, int(o.headDim), 0, o.heads, o.kvHeads, isl, batch)
	if !ok && o.ctxDtype != "bfloat16" {
		t, ok = o.k.ContextAttention("bfloat16", o.kvDtype, int(o.headDim), 0, o.heads, o.kvHeads, isl, batch)
	}
	return t, ok
}

// decodeFit is decode attention per layer from a kernel table: gamma per
// call, alpha per sequence, beta per cached token (fitted at set-up, so the
// step time stays affine in the decode context and the engine's
// fast-forward holds).
type decodeFit struct{ gamma, alpha, beta float64 }

// step is one layer's decode attention for seqs sequences, less the
// per-token part the worker's decodeCtxCost carries.
func (f *decodeFit) step(seqs float64) float64 { return f.gamma + f.alpha*seqs }

// tableDecode fits a worker's decode-attention table, or returns nil where
// the table does not answer or fails the bandwidth cross-check
// (DecodePlausible) for w's cache bytes per token.
func tableDecode(w *Worker, table func(b, s float64) (float64, bool)) *decodeFit {
	f, ok := fitAffineDecode(table)
	if !ok || !DecodePlausible(f.beta, w.kvElemsGPU*w.cfg.KV.Bytes(), w.cfg.Device.BandwidthGBps()*1e9) {
		return nil
	}
	return &f
}

// fitAffineDecode fits t(b, s) = gamma + alpha*b + beta*b*s to a decode
// attention table over batch sizes and context lengths serving sees, by
// least squares on the relative error (each row divided by its measured
// time). ok is false where the table does not answer every point or the
// fit leaves no cost per cached token.
func fitAffineDecode(table func(b, s float64) (float64, bool)) (decodeFit, bool) {
	bs := []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}
	ss := []float64{256, 1024, 2048, 4096, 8192, 16384}
	a := mat.NewDense(len(bs)*len(ss), 3, nil)
	ones := mat.NewVecDense(len(bs)*len(ss), nil)
	row := 0
	for _, b := range bs {
		for _, s := range ss {
			t, ok := table(b, s)
			if !ok || !(t > 0) {
				return decodeFit{}, false
			}
			a.SetRow(row, []float64{1 / t, b / t, b * s / t})
			ones.SetVec(row, 1)
			row++
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(a, ones); err != nil {
		return decodeFit{}, false
	}
	f := decodeFit{gamma: math.Max(x.AtVec(0), 0), alpha: math.Max(x.AtVec(1), 0), beta: math.Max(x.AtVec(2), 0)}
	return f, f.beta > 0
}

// The generation-MLA tables time DeepSeek-V3's latent: 512 values plus 64
// of rope per cached token. Absorbed decode reads just that, so a model
// with another latent is not what they measured.
const tableMLALatent, tableMLARope = 512, 64

// newMLADecode fits the generation-MLA table for an MLA worker the tables
// may price, or returns nil where they do not answer or fail the decode
// bandwidth cross-check (the roofline then prices it).
func newMLADecode(w *Worker) *decodeFit {
	cfg := w.cfg
	a := cfg.Model.MLA
	if !tablesPrice(w) || a == nil || a.KVLoraRank != tableMLALatent || a.QKRopeHeadDim != tableMLARope || cfg.Model.Sparse != nil {
		return nil
	}
	heads, kv := float64(cfg.Model.AttentionHeads)/w.tp, kvDtype(cfg.KV)
	return tableDecode(w, func(batch, s float64) (float64, bool) { return w.tables.GenerationMLA(kv, heads, batch, s) })
}

// layerCost is one layer's GEMMs and its tensor-parallel all-reduces.
type layerCost struct{ gemm, comm float64 }

// denseLayer is one layer's attention projections, dense MLP and
// tensor-parallel all-reduces for tokens rows, from the tables where they
// answer and the roofline where not. Memoised: serving repeats batch sizes.
func (o *opModel) denseLayer(w *Worker, tokens int, denseMLP bool) layerCost {
	key := tokens
	if !denseMLP {
		key = -tokens
	}
	o.mu.Lock()
	c, ok := o.dense[key]
	o.mu.Unlock()
	if ok {
		return c
	}
	m := float64(tokens)
	g := func(n, k float64) float64 {
		if s, ok := o.k.GEMM(o.wDtype, m, n, k); ok {
			return s
		}
		return w.gemm(m, n*k, m)
	}
	c.gemm = g(o.qkvN, o.hidden) + g(o.hidden, o.oK)
	if denseMLP {
		c.gemm += g(o.upN, o.hidden) + g(o.hidden, o.dK)
	}
	if w.tp > 1 {
		ar, ok := o.k.AllReduce(w.tp, m*o.hidden)
		if !ok {
			ar = w.allReduceOnce(m)
		}
		c.comm = 2 * ar
	}
	o.mu.Lock()
	o.dense[key] = c
	o.mu.Unlock()
	return c
}

// stepTime is FixedStepTime on the kernel tables, for a batch with tokens
// (verify extra query tokens on each decoding sequence); each share is
// added to p when p is not nil.
func (o *opModel) stepTime(w *Worker, b Batch, verify int, p *parts) float64 {
	tokens := b.PrefillTokens + b.DecodeSeqs*(1+verify)
	m := w.cfg.Model
	layers := float64(m.Layers)
	moeLayers := float64(m.MoELayers())
	ft := float64(tokens)
	// Dense layers carry the MLP in the projections' time; MoE layers add
	// their routed experts (and shared ones) on the roofline.
	d := o.denseLayer(w, tokens, true)
	p.add(PartDenseGEMM, layers-moeLayers, d.gemm)
	p.add(PartCommunication, layers-moeLayers, d.comm)
	t := (layers - moeLayers) * (d.gemm + d.comm)
	if moeLayers > 0 {
		d := o.denseLayer(w, tokens, false)
		experts := w.moe(ft, b.PrefillTokens > 0)
		shared := float64(m.MoE.SharedExperts) * w.gemm(ft, m.ExpertParams()/w.tp, ft)
		p.add(PartDenseGEMM, moeLayers, d.gemm+shared)
		p.add(PartCommunication, moeLayers, d.comm)
		p.add(PartExperts, moeLayers, experts)
		t += moeLayers * ((d.gemm + d.comm) + experts + shared)
	}
	t += layers * p.add(PartElementwise, layers, w.elementwise(ft))
	full := float64(m.FullAttentionLayers())
	if b.PrefillTokens > 0 {
		a, ok := 0.0, false
		if b.PrefillSeqs > 0 {
			// The table's prompts start empty: the batch's query-key pairs
			// give the prompt length with the same attention work.
			seqs := float64(b.PrefillSeqs)
			a, ok = o.ctxAttention(math.Sqrt(2*b.PrefillPairs/seqs), seqs)
		}
		if ok {
			t += full * p.add(PartAttention, full, a)
			if sliding := layers - full; sliding > 0 {
				t += sliding * p.add(PartAttention, sliding, w.attention(w.attnFlopsPair*b.PrefillSlidingPairs,
					(b.PrefillCtx+float64(b.PrefillTokens))*w.kvElemsGPU*w.cfg.KV.Bytes()))
			}
		} else {
			t += layers * p.add(PartAttention, layers, w.prefillAttention(b)+w.attnLayerFrac()*w.attnCall)
		}
	}
	if b.DecodeSeqs > 0 {
		if w.decode != nil {
			t += full * p.add(PartAttention, full, w.decode.step(float64(b.DecodeSeqs)))
		} else {
			t += p.add(PartAttention, 1, layers*w.attnLayerFrac()*w.decodeAttnCall)
		}
	}
	if b.Sampled > 0 {
		s := float64(b.Sampled)
		if head, ok := o.k.GEMM("bfloat16", s, o.vocabN, o.hidden); ok {
			t += p.add(PartOutputHead, 1, head)
		} else {
			t += p.add(PartOutputHead, 1, w.lmHead(s))
		}
	}
	return t
}
