package perf

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// Batch is the composition of one engine iteration. Context sums let the
// cost be evaluated in O(1) whatever the number of sequences.
type Batch struct {
	// PrefillTokens is the number of prompt tokens computed this iteration.
	PrefillTokens int
	// PrefillSeqs is the number of sequences with a prompt chunk.
	PrefillSeqs int
	// PrefillPairs is the sum over chunks of chunk*(ctx+chunk/2): the
	// causal attention query-key pairs of full-attention layers.
	PrefillPairs float64
	// PrefillSlidingPairs is the same for sliding-window layers, with the
	// key range capped at the window.
	PrefillSlidingPairs float64
	// PrefillCtx is the sum of context already cached before each chunk (read by attention).
	PrefillCtx float64
	// DecodeSeqs is the number of sequences generating one token.
	DecodeSeqs int
	// DecodeCtx is the sum of those sequences' context lengths.
	DecodeCtx float64
	// Sampled is the number of sequences that produce a token (decodes and finished prefills).
	Sampled int
}

// Worker evaluates iteration times and memory for one Config.
type Worker struct {
	cfg  Config
	fam  *FamilyParams
	be   *BackendParams
	comm CommParams

	tp, pp, ep, dp float64
	layersPerStage float64
	wBytes         float64
	gemmPeak       float64 // FLOP/s achieved on large GEMMs
	attnPeak       float64 // FLOP/s achieved by prefill attention
	gemmBW         float64 // bytes/s for weight streaming
	attnBW         float64 // bytes/s for KV reads
	attnCall       float64 // seconds: least time of one prefill attention call
	attnPrefillBW  float64 // bytes/s prefill attention moves queries, outputs and cache at (0: attnBW, cache only)
	qoBytesToken   float64 // bytes of queries and outputs per prompt token and layer
	decodeAttnSeq  float64 // seconds per decoding sequence in decode attention's own work (roofline only; a table times it)
	decodeAttnCall float64 // seconds: least time of one decode attention call
	elemBW         float64

	denseParams    float64 // per layer per GPU: attention + dense MLP (averaged) + shared experts
	gemmCalls      float64 // dense GEMM calls per layer (averaged)
	gemmCall       float64 // seconds: the least time of one GEMM call at the compute precision
	routedExperts  float64 // experts per MoE layer
	moeLayerFrac   float64
	expertParams   float64 // one expert's weights per GPU
	expertSlice    float64 // the matrices a GPU multiplies per expert (whole under EP)
	topK           float64
	lmHeadParams   float64
	hidden         float64
	attnFlopsPair  float64 // per full-attention layer per query-key pair, per GPU
	kvElemsGPU     float64 // per token per layer per GPU
	fullLayerFrac  float64
	slideLayerFrac float64
	slidingWindow  float64
	decodeCtxCost  float64    // seconds per context token, all layers
	decodeSeqCost  float64    // seconds per decode sequence: sliding windows, linear state, sparse top-k reads
	arLatency      float64    // seconds
	a2aLatency     float64    // seconds, one all-to-all over the EP group
	linkBW         float64    // bytes/s per direction between ranks
	tables         Kernels    // measured kernels covering the device (maybe scaled to it), nil without
	ops            *opModel   // measured kernels, when given and covering the config
	decode         *decodeFit // decode attention from a kernel table (ops' or an MLA model's), nil on the roofline
	tpAcrossNodes  bool       // the tensor-parallel ring leaves the NVLink domain
	a2aNodeShare   float64    // share of all-to-all traffic that stays inside the NVLink domain
	netBW          float64    // bytes/s per GPU over the scale-out network
	netLatency     float64    // seconds
	moeKernel      *MoEKernel
	notes          []string
	moePeak, moeBW float64 // the device's raw tensor peak and bandwidth, which moeKernel's fractions scale
	promptFloor    float64 // seconds: the least a prompt-carrying iteration takes (MoE models)
	moeFixed       float64 // seconds: the MoE layers' fixed cost in every iteration
	ttftFloor      float64 // seconds: the least TTFT of a request (MoETTFTFloorExpertUs per expert and MoE layer)

	// Gated delta-net layers: each sequence's state per GPU (all linear
	// layers of a stage) and the recurrent core's time per prompt token.
	linState, linTokCost float64
	// DeepSeek sparse attention: keys each query attends to, the
	// indexer's FLOPs per query-key pair, and the indexer keys cached per
	// token (all layers of a stage, every rank).
	sparseK, idxFlopsPair, idxBytesTok float64
	// idxCall is the indexer's fixed cost per iteration over the sparse
	// layers (FamilyParams.SparseIndexerUs).
	idxCall float64
	// idxPrefill* price the indexer's prompt side over the sparse layers:
	// per iteration with prompt tokens, per prompt token and per causal
	// pair under the top-k window (FamilyParams.SparsePrefill).
	idxPrefillCall, idxPrefillTok, idxPrefillPair float64
}

// NewWorker validates cfg and precomputes its cost coefficients.
func NewWorker(cfg Config, p *Params) (*Worker, error) {
	if err := cfg.normalise(p); err != nil {
		return nil, err
	}
	m, d := cfg.Model, cfg.Device
	w := &Worker{cfg: cfg, fam: p.Families[d.GPU.Architecture], be: p.Backends[cfg.Backend], comm: p.Comm}
	tables, note, err := p.tablesFor(d, cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("kernel tables: %w", err)
	}
	if w.tables = tables; note != "" {
		w.notes = append(w.notes, note)
	}
	w.tp, w.pp, w.ep, w.dp = float64(cfg.TP), float64(cfg.PP), float64(cfg.EP), float64(cfg.DP)
	w.layersPerStage = float64(m.Layers) / w.pp
	w.wBytes = cfg.Weights.Bytes()
	cp := d.GPU.ComputePrecision(cfg.Weights)
	if cfg.Weights == catalog.FP4 && cp != catalog.FP4 {
		// A user asking for fp4 on Hopper or Ampere should know what was priced.
		how := "as weight-only kernels run them there"
		if cp == catalog.FP8 {
			how = "as W4A8 kernels run them there; a kernel that dequantises them to bf16 instead prefills up to twice as slowly"
		}
		w.notes = append(w.notes, fmt.Sprintf("%s has no fp4 tensor cores: fp4 weights are priced as 4-bit reads multiplied at %s, %s", d.GPU.Name, cp, how))
	}
	eff := w.fam.GEMM[cp]
	if eff == 0 {
		eff = w.fam.GEMM[catalog.BF16]
	}
	w.gemmPeak = d.PeakTFLOPS(cfg.Weights) * 1e12 * eff
	w.attnPeak = d.PeakTFLOPS(catalog.BF16) * 1e12 * w.fam.AttentionCompute
	bw := d.BandwidthGBps() * 1e9
	w.gemmBW = bw * w.fam.GEMMBandwidthFor(cp)
	w.gemmCall = w.fam.GEMMCallUs[cp] * 1e-6
	w.attnBW = bw * w.fam.AttentionBandwidth
	w.attnCall, w.decodeAttnCall = w.fam.AttentionCallUs*1e-6, w.fam.DecodeAttentionCallUs*1e-6
	w.attnPrefillBW = bw * w.fam.AttentionPrefillBandwidth
	w.elemBW = bw * w.fam.ElementwiseBandwidth
	w.hidden = float64(m.HiddenSize)

	layers := float64(m.Layers)
	denseFrac := float64(m.Layers-m.MoELayers()) / layers
	w.denseParams = (m.AttentionParams() + denseFrac*m.DenseMLPParams()) / w.tp
	// Dense GEMM calls per layer: QKV and output, and the MLP's fused
	// gate-up and down (an MoE layer's only where it has shared experts).
	w.gemmCalls = 2 + 2*denseFrac
	if m.MoE != nil && m.MoE.SharedExperts > 0 {
		w.gemmCalls += 2 * float64(m.MoELayers()) / layers
	}
	if m.MoE != nil {
		w.moeLayerFrac = float64(m.MoELayers()) / layers
		w.denseParams += w.moeLayerFrac * float64(m.MoE.SharedExperts) * m.ExpertParams() / w.tp
		w.routedExperts = float64(m.MoE.Experts)
		// Routed experts spread over the MoE group: the TP x DP GPUs.
		w.expertParams = m.ExpertParams() / (w.tp * w.dp)
		if e := m.MoE.Experts; e%cfg.EP != 0 {
			// Expert-parallel ranks that do not divide the experts: the
			// busiest rank holds one expert more, and every rank waits for it.
			w.expertParams *= float64((e+cfg.EP-1)/cfg.EP*cfg.EP) / float64(e)
		}
		// The MoE kernel's tile efficiency is taken at the whole expert's
		// size whatever the split. The tables measure tp-sliced experts
		// slower (TensorRT-LLM FP8 at 8192 tokens: tp4 3.3 ms against 1.4 ms
		// for ep4), but priced so, the measured runs at tp 4-8 came out
		// slower than measured (max-throughput tables 24.7% MAPE against
		// 21.1%, MoE TPOT 27.1% against 25.2%, with a first fit of the
		// summaries): engines and benchmarks choose layouts that keep expert
		// GEMMs large.
		w.expertSlice = m.ExpertParams()
		w.promptFloor = float64(m.MoELayers()) * w.be.MoEPromptFloorUs * 1e-6
		w.moeFixed = float64(m.MoELayers()) * (w.be.MoELayerUs + w.be.MoELayerUsByArch[d.GPU.Architecture]) * 1e-6
		w.ttftFloor = float64(m.MoELayers()*m.MoE.Experts) * w.be.MoETTFTFloorExpertUs * 1e-6
		w.topK = float64(m.MoE.ExpertsPerToken)
		k, err := w.moeKernelFor(p)
		if err != nil {
			return nil, err
		}
		if k != nil {
			w.moeKernel, w.moePeak, w.moeBW = k, d.PeakTFLOPS(cfg.Weights)*1e12, bw
		}
	}
	w.lmHeadParams = float64(m.VocabSize) * w.hidden / w.tp

	headsGPU := float64(m.AttentionHeads) / w.tp
	// Queries in and outputs out, 16-bit, per prompt token and layer.
	w.qoBytesToken = headsGPU * 2 * float64(m.HeadDim) * 2
	if m.MLA != nil {
		a := m.MLA
		w.qoBytesToken = headsGPU * float64(a.QKNopeHeadDim+a.QKRopeHeadDim+a.VHeadDim) * 2
		w.attnFlopsPair = 2 * headsGPU * float64(a.QKNopeHeadDim+a.QKRopeHeadDim+a.VHeadDim)
		// The latent cache is shared by all heads, so every rank holds all of it.
		w.kvElemsGPU = float64(a.KVLoraRank + a.QKRopeHeadDim)
	} else {
		w.attnFlopsPair = 4 * headsGPU * float64(m.HeadDim)
		kvHeadsGPU := math.Max(1, float64(m.KVHeads)/w.tp)
		w.kvElemsGPU = 2 * kvHeadsGPU * float64(m.HeadDim)
	}
	w.fullLayerFrac = float64(m.FullAttentionLayers()) / layers
	if m.SlidingWindow > 0 {
		w.slideLayerFrac = float64(m.SlidingWindowLayers) / layers
	}
	if l := m.Linear; l != nil {
		lin := float64(l.Layers) / w.pp
		w.linState = lin * l.StateBytes() / w.tp
		// A decode step reads and writes each sequence's state.
		w.decodeSeqCost += 2 * w.linState / w.attnBW
		// Chunked delta rule: the state update and readout (4 dk dv per
		// head and token) plus attention within 64-token chunks.
		perHead := 4*float64(l.KeyHeadDim*l.ValueHeadDim) + 2*64*float64(l.KeyHeadDim+l.ValueHeadDim)
		w.linTokCost = lin * math.Max(1, float64(l.ValueHeads)/w.tp) * perHead / w.attnPeak
	}
	w.slidingWindow = float64(m.SlidingWindow)

	// Decode attention streams the cache; MLA's absorbed form also does
	// heads x latent FLOPs per cached token, so take the roofline per token.
	kvBytes := cfg.KV.Bytes()
	perCtxBytes := w.kvElemsGPU * kvBytes
	perCtxFlops := 4 * headsGPU * float64(m.HeadDim)
	if m.MLA != nil {
		perCtxFlops = 2 * headsGPU * float64(2*m.MLA.KVLoraRank+m.MLA.QKRopeHeadDim)
	}
	perCtx := DecodeAttentionPerToken(perCtxBytes, perCtxFlops, w.attnPeak, w.attnBW)
	// A speculative step's verify puts 1+SpecTokens queries a sequence on
	// each cached token: one read, that many times the FLOPs.
	verify := float64(1 + cfg.SpecTokens)
	w.decodeCtxCost = float64(m.FullAttentionLayers()) * DecodeAttentionPerToken(perCtxBytes, verify*perCtxFlops, w.attnPeak, w.attnBW) / w.pp
	if sp := m.Sparse; sp != nil {
		// Decode: the indexer scores every cached token, attention reads
		// the top k of them (taken as full: contexts past k).
		full := float64(m.FullAttentionLayers()) / w.pp
		w.sparseK = float64(sp.TopK)
		w.idxBytesTok = full * sp.IndexBytesPerTokenLayer()
		// A multiply-add per head dimension (2 FLOPs) in fp8, at twice the
		// bf16 rate attnPeak holds.
		w.idxFlopsPair = float64(sp.IndexHeads * sp.IndexHeadDim)
		perIdx := math.Max(sp.IndexBytesPerTokenLayer()/w.attnBW, w.idxFlopsPair/w.attnPeak)
		w.decodeCtxCost = full * perIdx
		w.decodeSeqCost += full * w.sparseK * perCtx
		// Like the other fixed costs of a call, every layer pays the
		// indexer's; its per-token work splits over the stages.
		all := float64(m.FullAttentionLayers())
		w.idxCall = all * w.fam.SparseIndexerUs[cfg.Backend] * 1e-6
		if c := w.fam.SparsePrefill[cfg.Backend]; c != nil {
			w.idxPrefillCall, w.idxPrefillTok, w.idxPrefillPair = all*c.CallUs*1e-6, full*c.TokenUs*1e-6, full*c.PairPs*1e-12
		}
	}
	w.decodeSeqCost += float64(m.SlidingWindowLayers) * w.slidingWindow * perCtx / w.pp
	w.decodeAttnSeq = float64(m.FullAttentionLayers()+m.SlidingWindowLayers) * w.fam.DecodeAttentionSeqUs * 1e-6 / w.pp

	w.linkBW = d.GPU.ScaleUpGBps() * 1e9 * p.Comm.AllReduceBusEfficiency
	w.netBW, w.netLatency = p.Comm.NetworkGBps*1e9, p.Comm.NetworkLatencyUs*1e-6
	// A collective's latency grows with log2 of its ranks; measured
	// all-to-alls inside a node start at about an all-reduce's latency.
	collective := func(ranks float64) float64 {
		if ranks <= 1 {
			return 0
		}
		return w.be.AllReduceLatencyUs * 1e-6 * (0.75 + 0.25*math.Log2(ranks))
	}
	w.arLatency, w.a2aLatency = collective(w.tp), collective(w.ep)
	dom := float64(d.GPU.MaxTP())
	w.tpAcrossNodes = w.tp > dom
	// Expert all-to-all: the share of peers inside the NVLink domain.
	w.a2aNodeShare = math.Min(1, dom/w.ep)
	if w.ops = newOpModel(w); w.ops != nil {
		w.decode = w.ops.decode
	} else {
		w.decode = newMLADecode(w)
	}
	if w.decode != nil {
		w.decodeCtxCost = float64(m.FullAttentionLayers()) * w.decode.beta
	}
	if k := float64(cfg.SpecTokens); k > 0 {
		// Each draft pass runs one layer's attention over the context.
		w.decodeCtxCost *= 1 + k/layers
	}
	if w.linState > 0 {
		// Engines reserve a state slot per sequence up front (SGLang's
		// state pool, vLLM's hybrid cache); the slots get at most half of
		// the cache memory, and the sequence cap shrinks to what they hold.
		if slots := int(w.cacheBytes(w.fixedBytes()) / 2 / w.linState); slots < w.cfg.MaxSeqs {
			w.cfg.MaxSeqs = max(1, slots)
		}
	}
	return w, nil
}

// FrontendTime is the API server's CPU time in seconds for a request with
// isl prompt tokens, before it reaches the engine.
func (w *Worker) FrontendTime(isl int) float64 {
	return w.be.FrontendOverheadMs*1e-3 + w.be.FrontendPerTokenUs*1e-6*float64(isl)
}

// FrontendSplit is FrontendTime in two parts: what a request spends on
// its own, in parallel with others, and then what it queues for
// (BackendParams.FrontendParallel).
func (w *Worker) FrontendSplit(isl int) (parallel, serial float64) {
	t := w.FrontendTime(isl)
	parallel = w.be.FrontendParallel * t
	return parallel, t - parallel
}

// ADPBalanceIters is how many iterations an attention-DP rank holds a
// prompt for its peers (0: it never does).
func (w *Worker) ADPBalanceIters() int { return w.be.ADPBalanceIters }

// ReservesFullRequest says whether the worker's engine sets aside a
// request's whole cache when it admits it (Config.Admission, by default
// BackendParams.ReserveFullRequest).
func (w *Worker) ReservesFullRequest() bool { return w.cfg.Admission == AdmitWhole }

// TTFTFloor is the least TTFT in seconds a request to this worker's model
// sees (BackendParams.MoETTFTFloorExpertUs per routed expert of each MoE
// layer; 0 for dense models).
func (w *Worker) TTFTFloor() float64 { return w.ttftFloor }

// DefaultPoolKnee is the decode knee of a backend whose parameters name
// none: the geometric mean of the best factors on the SGLang (6) and the
// TensorRT-LLM (2) runs without worker counts, each scored on the other
// backend (docs/PERFORMANCE-MODEL.md).
const DefaultPoolKnee = 3.5

// PoolKnee is the factor over a lone sequence's decode step at which a
// sized decode engine stops taking users (BackendParams.PoolKnee).
func (w *Worker) PoolKnee() float64 {
	if k := w.be.PoolKnee; k > 0 {
		return k
	}
	return DefaultPoolKnee
}

// Config returns the normalised configuration.
func (w *Worker) Config() Config { return w.cfg }

// DecodeCtxCost is the iteration time added per token of decode context.
// StepTime is affine in Batch.DecodeCtx with this slope, which lets the
// engine fast-forward through runs of identical decode iterations.
func (w *Worker) DecodeCtxCost() float64 { return w.decodeCtxCost }

// AttentionWindow is the keys a sliding-window layer's query sees, or the
// keys sparse attention picks (0 when the model has neither); the engine
// sums prompt pairs under it.
func (w *Worker) AttentionWindow() int {
	if w.sparseK > 0 {
		return int(w.sparseK) // sparse attention's top k
	}
	return int(w.slidingWindow)
}

// StepTime is the wall time in seconds of one engine iteration.
func (w *Worker) StepTime(b Batch) float64 {
	return w.FixedStepTime(b) + w.decodeCtxCost*b.DecodeCtx
}

// TokensPerStep is the tokens a decoding sequence gains per engine step:
// the mean acceptance length under speculative decoding, else one.
func (w *Worker) TokensPerStep() float64 {
	if w.cfg.SpecTokens > 0 {
		return w.cfg.SpecAccept
	}
	return 1
}

// DecodeTokenTime is the time per generated token of n sequences decoding
// at a mean context of ctx tokens: a decode step over the tokens a step
// gains (more than one under speculative decoding).
func (w *Worker) DecodeTokenTime(n int, ctx float64) float64 {
	return w.StepTime(DecodeBatch(n, ctx)) / w.TokensPerStep()
}

// DecodeBatch is an iteration of n sequences that only decode, each with
// ctx tokens cached and each sampling a token.
func DecodeBatch(n int, ctx float64) Batch {
	return Batch{DecodeSeqs: n, DecodeCtx: float64(n) * ctx, Sampled: n}
}

// FixedStepTime is StepTime without the decode-context term. Under
// speculative decoding a step verifies 1+k tokens of each decoding
// sequence (the linear and MoE layers, the per-token costs and the output
// head see them all) after k draft passes of one layer and the head each.
func (w *Worker) FixedStepTime(b Batch) float64 { return w.fixedStep(b, nil) }

// fixedStep is FixedStepTime, adding each share of it to p when p is not
// nil (StepBreakdown).
func (w *Worker) fixedStep(b Batch, p *parts) float64 {
	k := w.cfg.SpecTokens
	if k == 0 || b.DecodeSeqs == 0 {
		return w.fixedStepTime(b, 0, p)
	}
	n := b.DecodeSeqs
	draft := w.fixedStepTime(Batch{DecodeSeqs: n, Sampled: n}, 0, nil)/float64(w.cfg.Model.Layers) + w.lmHead(float64(n))
	v := b
	v.Sampled += n * k
	return w.fixedStepTime(v, k, p) + p.add(PartDraft, 1, float64(k)*draft)
}

// fixedStepTime prices b with verify extra query tokens on each decoding
// sequence.
func (w *Worker) fixedStepTime(b Batch, verify int, p *parts) float64 {
	tokens := float64(b.PrefillTokens+b.DecodeSeqs*(1+verify)) / w.pp
	if tokens <= 0 {
		return 0
	}
	var t float64
	if w.ops != nil {
		t = w.ops.stepTime(w, b, verify, p)
	} else {
		t = w.rooflineStep(b, tokens, p)
	}
	if b.PrefillTokens > 0 && w.promptFloor > t {
		p.add(PartPromptFloor, 1, w.promptFloor-t)
		t = w.promptFloor
	}
	t += p.add(PartOverheads, 1, w.moeFixed+w.be.StepOverheadMs*1e-3)
	if b.PrefillTokens > 0 {
		t += p.add(PartOverheads, 1, w.be.PrefillOverheadMs*1e-3)
		t += p.add(PartAttention, 1, w.idxPrefillCall+w.idxPrefillTok*float64(b.PrefillTokens)+w.idxPrefillPair*b.PrefillSlidingPairs)
	}
	t += p.add(PartOverheads, 1, w.be.PerSeqOverheadUs*1e-6*float64(b.DecodeSeqs+b.PrefillSeqs))
	t += p.add(PartAttention, 1, w.idxCall+w.decodeSeqCost*float64(b.DecodeSeqs)+w.linTokCost*float64(b.PrefillTokens))
	if w.decode == nil {
		t += p.add(PartAttention, 1, w.decodeAttnSeq*float64(b.DecodeSeqs))
	}
	return t
}

// rooflineStep is the iteration's compute and communication on the roofline.
func (w *Worker) rooflineStep(b Batch, tokens float64, p *parts) float64 {
	n := w.pp * w.layersPerStage
	layer := p.add(PartDenseGEMM, n, w.gemm(tokens, w.denseParams, tokens)+w.gemmCalls*w.gemmCall)
	if w.routedExperts > 0 {
		layer += p.add(PartExperts, n, w.moeLayerFrac*w.moe(tokens, b.PrefillTokens > 0))
	}
	layer += p.add(PartElementwise, n, w.elementwise(tokens))
	layer += p.add(PartCommunication, n, w.allReduce(tokens))
	if b.PrefillTokens > 0 {
		layer += p.add(PartAttention, n, w.prefillAttention(b)+w.attnLayerFrac()*w.attnCall)
	}
	if b.DecodeSeqs > 0 {
		if w.decode != nil {
			layer += p.add(PartAttention, n, w.attnLayerFrac()*w.decode.step(float64(b.DecodeSeqs)))
		} else {
			layer += p.add(PartAttention, n, w.attnLayerFrac()*w.decodeAttnCall)
		}
	}
	t := n * layer
	if b.Sampled > 0 {
		t += p.add(PartOutputHead, 1, w.lmHead(float64(b.Sampled)))
	}
	if w.pp > 1 {
		t += p.add(PartCommunication, 1, (w.pp-1)*(w.comm.P2PLatencyUs*1e-6+tokens*w.hidden*2/w.linkBW))
	}
	return t
}

// gemm is the roofline time of a GEMM over tokens rows and params weights
// (per GPU). rows is the M that sets the tile efficiency.
func (w *Worker) gemm(tokens, params, rows float64) float64 {
	return w.gemmWith(tokens, params, w.wBytes, rows)
}

// GEMMRowsHalf is the M at which a GEMM reaches half its large-shape
// efficiency: tiles of 64-128 rows are mostly idle below it.
const GEMMRowsHalf = 24

func (w *Worker) gemmWith(tokens, params, wBytes, rows float64) float64 {
	return GEMMRoofline(2*tokens*params, rows, params*wBytes+2*tokens*w.hidden*2, w.gemmPeak, w.gemmBW)
}

// GEMMRoofline is the time of a GEMM doing flops over rows rows of M and
// moving bytes, at peak FLOP/s and bw bytes/s already scaled by their
// efficiencies: the small-M tile loss and the smoothed roofline that the
// model prices every dense GEMM with (and calibrate kernels fits against
// the measured tables).
func GEMMRoofline(flops, rows, bytes, peak, bw float64) float64 {
	return smoothMax(flops/(peak*rows/(rows+GEMMRowsHalf)), bytes/bw)
}

// attention is the roofline time of prefill attention doing flops and
// reading bytes.
func (w *Worker) attention(flops, bytes float64) float64 {
	return AttentionRoofline(flops, bytes, w.attnPeak, w.attnBW)
}

// AttentionRoofline is the smoothed roofline prefill attention is priced
// with, at peak FLOP/s and bw bytes/s already scaled by their efficiencies
// (calibrate kernels fits the same form to the measured tables).
func AttentionRoofline(flops, bytes, peak, bw float64) float64 {
	return smoothMax(flops/peak, bytes/bw)
}

// DecodeAttentionPerToken is decode attention's time per cached token of
// one layer: the slower of streaming kvBytes and doing flops, at rates
// already scaled by their efficiencies.
func DecodeAttentionPerToken(kvBytes, flops, peak, bw float64) float64 {
	return math.Max(kvBytes/bw, flops/peak)
}

// elementwise is one layer's norms, activations and rotary embeddings.
func (w *Worker) elementwise(tokens float64) float64 {
	return tokens * 12 * w.hidden * 2 / w.elemBW
}

// lmHead is the output projection for the sequences that sample a token.
func (w *Worker) lmHead(sampled float64) float64 {
	return w.gemmWith(sampled, w.lmHeadParams, catalog.BF16.Bytes(), sampled) + w.fam.GEMMCallUs[catalog.BF16]*1e-6
}

// moeKernelFor picks the fused-MoE summary: fitted to the measured table of
// this GPU and backend when --kernels gives one, else the embedded one of
// the architecture. Either way one that is not Plausible gives way as in
// MoEKernelFor, and Notes says so. A slice scales either by its peak and
// bandwidth.
//
// MXFP4 experts (catalog.Model.ExpertsMXFP4) are priced by an MXFP4
// summary (MoEKey) where one applies, else as fp4 experts.
func (w *Worker) moeKernelFor(p *Params) (*MoEKernel, error) {
	if w.cfg.Model.ExpertsMXFP4(w.cfg.Weights) {
		n := len(w.notes)
		k, err := w.moeKernelAt(p, MXFP4)
		if k != nil || err != nil {
			return k, err
		}
		w.notes = w.notes[:n] // what gave way: fp4's summary prices them, with its own notes
	}
	return w.moeKernelAt(p, w.cfg.Weights)
}

// moeKernelAt is moeKernelFor for one summary key.
func (w *Worker) moeKernelAt(p *Params, key catalog.Precision) (*MoEKernel, error) {
	d := w.cfg.Device
	if w.tables != nil {
		mk, err := w.tables.MoE(key)
		wp := MoEWeights(key)
		peak, bw, wb := d.PeakTFLOPS(wp)*1e12, d.BandwidthGBps()*1e9, wp.Bytes()
		if err != nil || (mk != nil && mk.Plausible(peak, bw, wb)) {
			return mk, err
		}
		if mk != nil {
			table := fmt.Sprintf("the measured %s %s fused-MoE table of %s", w.cfg.Backend, key, measuredOn(w.tables, d))
			w.notes = append(w.notes, givesWay(table, mk.DecodeStreaming(peak, bw, wb), "the", "with the embedded summaries"))
		}
	}
	k, note := p.moeKernelChoice(d.GPU, w.cfg.Backend, key)
	if note != "" {
		w.notes = append(w.notes, note)
	}
	return k, nil
}

// Notes say where the worker is priced otherwise than its configuration
// reads (a kernel summary that gave way to another).
func (w *Worker) Notes() []string { return w.notes }

// moe is one MoE layer's routed-expert time: weights of every expert that at
// least one token routes to are read; FLOPs follow the routed tokens.
//
// Under attention DP the experts serve every rank's tokens at once: the
// DP ranks step together, so tokens is taken as one rank's and the group
// routes DP times as many (ranks held balanced).
func (w *Worker) moe(tokens float64, eager bool) float64 {
	t := w.moeCompute(tokens, eager)
	if remote := w.a2aRemoteShare(); remote > 0 {
		// Dispatch and combine all-to-all over the expert-parallel group;
		// the traffic to peers past the NVLink domain crosses the network.
		bytes := tokens * w.topK * w.hidden * 2 * remote
		move := bytes * w.a2aNodeShare / w.linkBW
		lat := w.a2aLatency
		if w.a2aNodeShare < 1 {
			move = math.Max(move, bytes*(1-w.a2aNodeShare)/w.netBW)
			lat += w.netLatency
		}
		t += 2 * (lat + move)
	}
	return t
}

// a2aRemoteShare is the share of a rank's routed token copies that one of
// its GPUs sends to experts outside the rank, per token of the rank. A
// rank's tp GPUs all hold its tokens and own tp/ep of the experts between
// them, so they split the sending, and with tp >= ep every expert a token
// needs is already local: tensor-parallel attention with expert-parallel
// MoE (tp 8, ep 8, dp 1) exchanges no tokens and reduces the experts'
// outputs with the tp all-reduce a dense MLP has.
func (w *Worker) a2aRemoteShare() float64 {
	if w.ep <= 1 || w.tp >= w.ep {
		return 0
	}
	return (1 - w.tp/w.ep) / w.tp
}

// moeCompute is the routed experts' GEMMs of one rank's tokens (and the
// other DP ranks' tokens its experts also serve).
func (w *Worker) moeCompute(tokens float64, eager bool) float64 {
	e, k := w.routedExperts, w.topK
	all := tokens * w.dp
	if w.moeKernel != nil {
		if all <= 0 {
			return 0
		}
		return w.moeKernel.Seconds(MoEShape{Tokens: all, TopK: k, Experts: e, ExpertParams: w.expertParams, SliceParams: w.expertSlice, WeightBytes: w.wBytes, Eager: eager, Ranks: w.ep}, w.moePeak, w.moeBW)
	}
	active, picks := MoEShape{Tokens: all, TopK: k, Experts: e, Ranks: w.ep}.busiestRank()
	rows := all * k / e
	if rows < 1 {
		rows = 1
	}
	tc := 2 * picks * w.expertParams / (w.gemmPeak * rows / (rows + GEMMRowsHalf))
	tm := active * w.expertParams * w.wBytes / w.gemmBW
	return smoothMax(tc, tm)
}

// attnLayerFrac is the share of layers that run softmax attention (full or
// sliding window; linear-attention layers have none).
func (w *Worker) attnLayerFrac() float64 { return w.fullLayerFrac + w.slideLayerFrac }

func (w *Worker) prefillAttention(b Batch) float64 {
	flops := w.attnFlopsPair * (w.fullLayerFrac*b.PrefillPairs + w.slideLayerFrac*b.PrefillSlidingPairs)
	if w.sparseK > 0 {
		// Sparse: attention over the top-k window, the indexer over all pairs.
		flops = w.fullLayerFrac * (w.attnFlopsPair*b.PrefillSlidingPairs + w.idxFlopsPair*b.PrefillPairs)
	}
	bytes := (b.PrefillCtx + float64(b.PrefillTokens)) * w.kvElemsGPU * w.cfg.KV.Bytes()
	if w.attnPrefillBW > 0 {
		bytes += float64(b.PrefillTokens) * w.qoBytesToken
		return AttentionRoofline(flops/w.pp, bytes/w.pp, w.attnPeak, w.attnPrefillBW)
	}
	return w.attention(flops/w.pp, bytes/w.pp)
}

// allReduce is the tensor-parallel communication of one layer: two ring
// all-reduces of the activations, after attention and after the MLP. An
// MoE layer's experts, spread over ranks or not, leave each of a rank's tp
// GPUs a partial sum of its tokens' outputs, which the second one reduces.
func (w *Worker) allReduce(tokens float64) float64 {
	if w.tp <= 1 {
		return 0
	}
	return 2 * w.allReduceOnce(tokens)
}

// allReduceOnce is one ring all-reduce of tokens rows of activations; a
// ring past the NVLink domain runs at the network's rate.
func (w *Worker) allReduceOnce(tokens float64) float64 {
	if w.tp <= 1 {
		return 0
	}
	lat, bw := w.arLatency, w.linkBW
	if w.tpAcrossNodes {
		// NCCL's rings across nodes reach about one NIC's rate of bus bandwidth.
		lat, bw = lat+2*w.netLatency, w.netBW
	}
	return lat + 2*(w.tp-1)/w.tp*tokens*w.hidden*2/bw
}

// smoothMax blends the two roofline limbs: kernels near the ridge point run
// slower than the larger limb alone.
func smoothMax(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if a == 0 {
		return 0
	}
	r := b / a
	return a * math.Cbrt(1+r*r*r)
}
