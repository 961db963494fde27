package perf

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/strict"
)

// Params are the calibrated efficiencies and overheads of the model. The
// defaults are fitted by `gpuplane calibrate` on measured serving runs and
// embedded; a user may pass their own file.
type Params struct {
	// Version of the file schema.
	Version int `json:"version"`
	// Source says how the parameters were obtained.
	Source   string                     `json:"source,omitempty"`
	Families map[string]*FamilyParams   `json:"families"`
	Backends map[Backend]*BackendParams `json:"backends"`
	Comm     CommParams                 `json:"comm"`
	// Intervals, when known, are the held-out spreads of the predictions
	// (gpuplane calibrate --cv writes them).
	Intervals *Intervals `json:"intervals,omitempty"`
	// Kernels, when set, prices operations from measured kernel tables
	// where they cover the GPU and backend (gpuplane --kernels DIR).
	Kernels KernelSource `json:"-"`
}

// FamilyParams are achieved fractions of peak for one GPU architecture.
type FamilyParams struct {
	// GEMM is the achieved fraction of dense tensor peak for large GEMMs, per compute precision.
	GEMM map[catalog.Precision]float64 `json:"gemm"`
	// GEMMBandwidth is the fraction of memory bandwidth weight-streaming GEMMs reach.
	GEMMBandwidth float64 `json:"gemmBandwidth"`
	// GEMMCallUs is the least time one GEMM kernel takes whatever its size
	// (prologue, epilogue, a partly filled wave): a layer's four dense GEMMs
	// pay it even when decode runs them as a CUDA graph. Fitted to the
	// measured GEMM tables with the efficiencies (gpuplane calibrate kernels).
	GEMMCallUs map[catalog.Precision]float64 `json:"gemmCallUs,omitempty"`
	// GEMMPrecisionBandwidth, where given for a compute precision,
	// replaces GEMMBandwidth for it (block-scaled FP4 streams its scales
	// and dequantises: Blackwell's tables show about two thirds of BF16's).
	GEMMPrecisionBandwidth map[catalog.Precision]float64 `json:"gemmPrecisionBandwidth,omitempty"`
	// AttentionCompute is the fraction of bf16 peak that prefill attention reaches.
	AttentionCompute float64 `json:"attentionCompute"`
	// AttentionBandwidth is the fraction of memory bandwidth decode attention reaches reading the KV cache.
	AttentionBandwidth float64 `json:"attentionBandwidth"`
	// AttentionCallUs and DecodeAttentionCallUs are the least time one
	// prefill or decode attention call takes (a layer pays each in an
	// iteration that has prompt tokens or decoding sequences). Fitted to the
	// measured attention tables with the two efficiencies (gpuplane calibrate
	// kernels); absent, step overheads carry them.
	AttentionCallUs       float64 `json:"attentionCallUs,omitempty"`
	DecodeAttentionCallUs float64 `json:"decodeAttentionCallUs,omitempty"`
	// AttentionPrefillBandwidth, where given, is the fraction of bandwidth
	// prefill attention moves its queries, outputs and cache at; the
	// prefill roofline then counts the query and output traffic, which
	// bounds short prompts. Absent, prefill counts the cache at
	// AttentionBandwidth.
	AttentionPrefillBandwidth float64 `json:"attentionPrefillBandwidth,omitempty"`
	// DecodeAttentionSeqUs is decode attention's cost per sequence in each
	// attention layer (its own blocks and reductions), beyond streaming the cache.
	DecodeAttentionSeqUs float64 `json:"decodeAttentionSeqUs,omitempty"`
	// SparseIndexerUs is, per backend, the fixed time DeepSeek sparse
	// attention's indexer adds to each sparse layer of an iteration: its
	// projections, scores and top-k run as kernels of their own, whose
	// launch and tail cost about as much at one sequence as at sixteen.
	// Taken from the measured attention-block tables, the DSA block less
	// the MLA block of the same shape at contexts the top-k covers
	// (gpuplane calibrate kernels --only dsa); absent, none.
	SparseIndexerUs map[Backend]float64 `json:"sparseIndexerUs,omitempty"`
	// SparsePrefill is, per backend, what a prompt costs a sparse layer
	// beyond its MLA core: the indexer scores every causal query-key pair
	// and each query gathers its top k, unsplit by tensor parallelism.
	// Taken from the prefill attention-block tables, the DSA block less the
	// MLA block of the same prompts (gpuplane calibrate kernels --only
	// dsa); absent, none.
	SparsePrefill map[Backend]*SparsePrefillCost `json:"sparsePrefill,omitempty"`
	// ElementwiseBandwidth is the fraction of bandwidth norms, activations and rotary embeddings reach.
	ElementwiseBandwidth float64 `json:"elementwiseBandwidth"`
	// MoE holds the fused-MoE kernels fitted to measured kernel tables, per
	// backend and weight precision; where absent, experts are priced as dense GEMMs.
	MoE map[Backend]map[catalog.Precision]*MoEKernel `json:"moe,omitempty"`
}

// SparsePrefillCost prices a sparse layer's prompt-side indexer: a fixed
// time per iteration with prompt tokens, a time per prompt token and a
// time per causal query-key pair under the top-k window (the pairs the
// gathered attention computes).
type SparsePrefillCost struct {
	CallUs  float64 `json:"callUs"`
	TokenUs float64 `json:"tokenUs"`
	PairPs  float64 `json:"pairPs"`
}

// GEMMBandwidthFor is the weight-streaming bandwidth fraction of GEMMs
// computing at p: the precision's own where given, else the family's.
func (f *FamilyParams) GEMMBandwidthFor(p catalog.Precision) float64 {
	if v := f.GEMMPrecisionBandwidth[p]; v > 0 {
		return v
	}
	return f.GEMMBandwidth
}

// BackendParams are a serving engine's scheduling defaults and overheads.
type BackendParams struct {
	// StepOverheadMs is the fixed CPU and launch cost of one engine iteration.
	StepOverheadMs float64 `json:"stepOverheadMs"`
	// PrefillOverheadMs is added to iterations that carry prompt tokens (no CUDA graph, more bookkeeping).
	PrefillOverheadMs float64 `json:"prefillOverheadMs"`
	// MoEPromptFloorUs is, per MoE layer, the least time an iteration with
	// prompt tokens takes. Engines run prompts eagerly, and the MoE path
	// (routing, host syncs on expert counts, many launches) is CPU-bound
	// for short prompts; long prompts hide it behind the GPU work, so it is
	// a floor, not a cost added on top. Chosen per backend on measured MoE
	// runs by `gpuplane calibrate moe`.
	MoEPromptFloorUs float64 `json:"moePromptFloorUs,omitempty"`
	// MoETTFTFloorExpertUs is, per routed expert of each MoE layer, the
	// least TTFT a request sees: a latency on the request's path outside
	// the engine's iterations, which shows at light load and hides behind
	// queueing under heavy load. It grows with the experts a layer holds
	// (held out by model, that carries from one MoE model to another
	// better than a cost per layer). Chosen per backend on measured MoE
	// runs by `gpuplane calibrate ttft-floor`.
	MoETTFTFloorExpertUs float64 `json:"moeTtftFloorExpertUs,omitempty"`
	// MoELayerUs is a fixed cost per MoE layer of every iteration: the
	// routing, top-k, token permutation and combine that run as kernels of
	// their own around the fused expert GEMMs the kernel tables time.
	// Chosen with MoEPromptFloorUs.
	MoELayerUs float64 `json:"moeLayerUs,omitempty"`
	// MoELayerUsByArch adds to MoELayerUs on GPUs of one architecture
	// (keyed "hopper", "blackwell", ...): an engine's MoE path need not
	// run the same kernels around the experts on every architecture.
	// Chosen per backend and architecture on that architecture's measured
	// MoE runs by `gpuplane calibrate moe-layer --arch`.
	MoELayerUsByArch map[string]float64 `json:"moeLayerUsByArch,omitempty"`
	// FrontendOverheadMs is the API server's CPU time per request (HTTP
	// handling, request set-up, the first streamed chunk). The server handles
	// one request at a time, so bursts queue in front of it.
	FrontendOverheadMs float64 `json:"frontendOverheadMs"`
	// HandoffMs is a disaggregated request's hand-off cost beyond moving
	// its KV cache: the decode side's admission handshake with the prefill
	// worker and the transfer engine's set-up, a fixed time per request.
	// Chosen per backend on the measured disaggregated runs by `gpuplane
	// calibrate handoff`.
	HandoffMs float64 `json:"handoffMs,omitempty"`
	// ADPBalanceIters is how many iterations an attention-DP rank keeps a
	// new prompt waiting while every rank of its worker is decoding and
	// some rank has no prompt to start (0: never). TensorRT-LLM balances
	// attention-DP ranks so: their prompts start in one iteration, so that
	// no rank's prefill stalls the others' decode steps in the shared MoE
	// layers. Chosen per backend on the measured attention-DP runs by
	// `gpuplane calibrate adp`.
	ADPBalanceIters int `json:"adpBalanceIters,omitempty"`
	// PoolKnee sizes the decode pool of a disaggregated query without
	// worker counts: an engine takes users up to the batch whose decode
	// step lasts PoolKnee times a lone sequence's (0: DefaultPoolKnee).
	// Chosen per backend on the measured runs without worker counts by
	// `gpuplane calibrate pools`.
	PoolKnee float64 `json:"poolKnee,omitempty"`
	// FrontendParallel is the share (0-1) of the API server's time per
	// request that requests spend each on their own (asynchronous
	// handling) before the part they queue for one at a time (0: all of
	// it queues). Chosen per backend on the measured serving runs by
	// `gpuplane calibrate frontend`.
	FrontendParallel float64 `json:"frontendParallel,omitempty"`
	// FrontendPerTokenUs is the API server's CPU time per prompt token (tokenisation).
	FrontendPerTokenUs float64 `json:"frontendPerTokenUs"`
	// PerSeqOverheadUs is the per-sequence cost of an iteration (scheduling, sampling, detokenising).
	PerSeqOverheadUs float64 `json:"perSeqOverheadUs"`
	// AllReduceLatencyUs is the latency of one small tensor-parallel all-reduce between two GPUs.
	AllReduceLatencyUs float64 `json:"allReduceLatencyUs"`
	// MaxBatchedTokens is the default token budget of one iteration (chunked prefill).
	MaxBatchedTokens int `json:"maxBatchedTokens"`
	// MaxSeqs is the default cap on sequences in one iteration.
	MaxSeqs int `json:"maxSeqs"`
	// SmallDevice* replace MaxBatchedTokens and MaxSeqs on devices with less
	// memory than SmallDeviceGiB (vLLM picks smaller defaults below 70 GiB).
	SmallDeviceGiB              float64 `json:"smallDeviceGiB,omitempty"`
	SmallDeviceMaxBatchedTokens int     `json:"smallDeviceMaxBatchedTokens,omitempty"`
	SmallDeviceMaxSeqs          int     `json:"smallDeviceMaxSeqs,omitempty"`
	// MemoryUtilization is the share of GPU memory the engine may use
	// (of the total for vllm and sglang, of what is free after weights for trtllm).
	MemoryUtilization float64 `json:"memoryUtilization"`
	// MemoryOfFree selects the TensorRT-LLM semantics of MemoryUtilization.
	MemoryOfFree bool `json:"memoryOfFree,omitempty"`
	// ReserveGiB is memory kept for the CUDA context, graphs and
	// communication buffers on a device of ReserveFullDeviceGiB or more.
	ReserveGiB float64 `json:"reserveGiB"`
	// ReserveFloorGiB is the reserve of a tiny device (CUDA context and
	// allocator slack); between it and ReserveGiB the reserve grows with the
	// device's memory, since graph pools and buffers are sized by batch
	// limits that engines lower on small devices. vLLM logs 0.2 GiB of
	// non-torch memory on 24 GiB GPUs and 1.8 GiB on 80 GiB ones.
	ReserveFloorGiB      float64 `json:"reserveFloorGiB,omitempty"`
	ReserveFullDeviceGiB float64 `json:"reserveFullDeviceGiB,omitempty"`
	// KVFollowsWeights stores the KV cache in fp8 when weights are quantised (TensorRT-LLM's default).
	KVFollowsWeights bool `json:"kvFollowsWeights,omitempty"`
	// ReserveFullRequest admits a request only when the cache holds its
	// prompt and all its output beside what the running ones reserved
	// (TensorRT-LLM's GUARANTEED_NO_EVICT); false allocates as tokens come
	// and preempts when a step would overflow (vLLM, SGLang).
	ReserveFullRequest bool `json:"reserveFullRequest,omitempty"`
}

// CommParams describe the interconnects.
type CommParams struct {
	// AllReduceBusEfficiency is the achieved fraction of link bandwidth for large all-reduces.
	AllReduceBusEfficiency float64 `json:"allReduceBusEfficiency"`
	// NetworkGBps is the per-GPU scale-out bandwidth per direction (RDMA NIC).
	NetworkGBps float64 `json:"networkGBps"`
	// NetworkLatencyUs is the scale-out latency of one transfer.
	NetworkLatencyUs float64 `json:"networkLatencyUs"`
	// P2PLatencyUs is the latency of one point-to-point transfer inside a node.
	P2PLatencyUs float64 `json:"p2pLatencyUs"`
}

//go:embed params/default.yaml
var defaultParams []byte

// DefaultParams returns the embedded calibrated parameters.
func DefaultParams() (*Params, error) {
	return ParseParams(defaultParams, "embedded params/default.yaml")
}

// MustDefaultParams panics if the embedded parameters are broken (a build defect).
func MustDefaultParams() *Params {
	p, err := DefaultParams()
	if err != nil {
		panic(err)
	}
	return p
}

// LoadParams reads a parameter file written by `gpuplane calibrate`.
func LoadParams(path string) (*Params, error) {
	b, err := strict.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read params: %w", err)
	}
	return ParseParams(b, path)
}

// renamedParams says what replaced a key that parameter files written by
// an earlier gpuplane may still hold.
var renamedParams = map[string]string{
	"moeTtftFloorUs": "moeTtftFloorExpertUs replaced it: the TTFT floor is now per routed expert of each MoE layer, so divide the old value by the model's routed experts (2000 at 128 experts is 15.6), or run gpuplane calibrate ttft-floor --out FILE",
}

// ParseParams decodes and validates a parameter file.
func ParseParams(b []byte, src string) (*Params, error) {
	var p Params
	if err := strict.Unmarshal(b, &p); err != nil {
		for old, hint := range renamedParams {
			if strings.Contains(err.Error(), `unknown field "`+old+`"`) {
				return nil, fmt.Errorf("params %s: %w; %s", src, err, hint)
			}
		}
		return nil, fmt.Errorf("params %s: %w", src, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("params %s: %w", src, err)
	}
	return &p, nil
}

// Marshal renders the parameters as YAML.
func (p *Params) Marshal() ([]byte, error) { return yaml.Marshal(p) }

// Clone deep-copies the parameters (the fitter mutates copies).
func (p *Params) Clone() *Params {
	b, _ := yaml.Marshal(p)
	var q Params
	_ = yaml.Unmarshal(b, &q)
	q.Kernels = p.Kernels
	return &q
}

// ReserveGiBFor is the runtime reserve on a device of devGiB.
func (b *BackendParams) ReserveGiBFor(devGiB float64) float64 {
	if b.ReserveFullDeviceGiB <= 0 || devGiB >= b.ReserveFullDeviceGiB {
		return b.ReserveGiB
	}
	return b.ReserveFloorGiB + (b.ReserveGiB-b.ReserveFloorGiB)*devGiB/b.ReserveFullDeviceGiB
}

// Validate checks ranges so a bad file fails loudly instead of predicting nonsense.
func (p *Params) Validate() error {
	if p.Version != 1 {
		return fmt.Errorf("version: got %d, want 1", p.Version)
	}
	for _, fam := range []string{catalog.Ampere, catalog.Ada, catalog.Hopper, catalog.Blackwell} {
		f, ok := p.Families[fam]
		if !ok || f == nil {
			return fmt.Errorf("families.%s: missing", fam)
		}
		if f.GEMM[catalog.BF16] <= 0 {
			return fmt.Errorf("families.%s.gemm.bf16: must be in (0, 1]", fam)
		}
		for k, v := range f.GEMM {
			if !(v > 0 && v <= 1) {
				return fmt.Errorf("families.%s.gemm.%s: %g must be in (0, 1]", fam, k, v)
			}
		}
		for name, v := range map[string]float64{"gemmBandwidth": f.GEMMBandwidth, "attentionCompute": f.AttentionCompute,
			"attentionBandwidth": f.AttentionBandwidth, "elementwiseBandwidth": f.ElementwiseBandwidth} {
			if !(v > 0 && v <= 1) {
				return fmt.Errorf("families.%s.%s: %g must be in (0, 1]", fam, name, v)
			}
		}
		if v := f.AttentionPrefillBandwidth; !(v >= 0 && v <= 1) {
			return fmt.Errorf("families.%s.attentionPrefillBandwidth: %g must be in (0, 1], or absent", fam, v)
		}
		for name, v := range map[string]float64{"attentionCallUs": f.AttentionCallUs, "decodeAttentionCallUs": f.DecodeAttentionCallUs, "decodeAttentionSeqUs": f.DecodeAttentionSeqUs} {
			if !(v >= 0 && v <= 1000) {
				return fmt.Errorf("families.%s.%s: %g must be in [0, 1000] microseconds", fam, name, v)
			}
		}
		for k, v := range f.GEMMCallUs {
			if err := computePrecisionKey(k); err != nil {
				return fmt.Errorf("families.%s.gemmCallUs.%s: %w", fam, k, err)
			}
			if !(v >= 0 && v <= 1000) {
				return fmt.Errorf("families.%s.gemmCallUs.%s: %g must be in [0, 1000] microseconds", fam, k, v)
			}
		}
		for k, v := range f.GEMMPrecisionBandwidth {
			if err := computePrecisionKey(k); err != nil {
				return fmt.Errorf("families.%s.gemmPrecisionBandwidth.%s: %w", fam, k, err)
			}
			if !(v > 0 && v <= 1) {
				return fmt.Errorf("families.%s.gemmPrecisionBandwidth.%s: %g must be in (0, 1]", fam, k, v)
			}
		}
		for b, v := range f.SparseIndexerUs {
			if !slices.Contains(Backends, b) {
				return fmt.Errorf("families.%s.sparseIndexerUs.%s: unknown backend; want one of %v", fam, b, Backends)
			}
			if !(v >= 0 && v <= 10000) {
				return fmt.Errorf("families.%s.sparseIndexerUs.%s: %g must be in [0, 10000] microseconds", fam, b, v)
			}
		}
		for b, c := range f.SparsePrefill {
			at := fmt.Sprintf("families.%s.sparsePrefill.%s", fam, b)
			if !slices.Contains(Backends, b) {
				return fmt.Errorf("%s: unknown backend; want one of %v", at, Backends)
			}
			if c == nil {
				return fmt.Errorf("%s: empty; give callUs, tokenUs and pairPs or remove it", at)
			}
			for name, v := range map[string]float64{"callUs": c.CallUs, "tokenUs": c.TokenUs, "pairPs": c.PairPs} {
				if !(v >= 0 && v <= 1e5) {
					return fmt.Errorf("%s.%s: %g must be in [0, 100000]", at, name, v)
				}
			}
		}
		for b, byPrec := range f.MoE {
			if !slices.Contains(Backends, b) {
				return fmt.Errorf("families.%s.moe.%s: unknown backend; want one of %v", fam, b, Backends)
			}
			for prec, k := range byPrec {
				at := fmt.Sprintf("families.%s.moe.%s.%s", fam, b, prec)
				if c, err := catalog.ParsePrecision(string(prec)); prec != MXFP4 && (err != nil || c != prec) {
					return fmt.Errorf("%s: unknown weight precision %q; want bf16, fp8, fp4, mxfp4, int8 or w4a16", at, prec)
				}
				if k == nil {
					return fmt.Errorf("%s: empty; give compute, bandwidth, rowsHalf and launchUs or remove it", at)
				}
				if err := k.validate(at); err != nil {
					return err
				}
			}
		}
	}
	for _, b := range Backends {
		bp, ok := p.Backends[b]
		if !ok || bp == nil {
			return fmt.Errorf("backends.%s: missing", b)
		}
		for _, f := range []struct {
			name string
			v    float64
			max  float64
		}{{"stepOverheadMs", bp.StepOverheadMs, 1000}, {"prefillOverheadMs", bp.PrefillOverheadMs, 1000},
			{"moePromptFloorUs", bp.MoEPromptFloorUs, 100000}, {"moeTtftFloorExpertUs", bp.MoETTFTFloorExpertUs, 10000}, {"moeLayerUs", bp.MoELayerUs, 100000},
			{"frontendOverheadMs", bp.FrontendOverheadMs, 10000}, {"frontendPerTokenUs", bp.FrontendPerTokenUs, 1000},
			{"handoffMs", bp.HandoffMs, 10000},
			{"perSeqOverheadUs", bp.PerSeqOverheadUs, 100000}, {"allReduceLatencyUs", bp.AllReduceLatencyUs, 100000},
			{"reserveGiB", bp.ReserveGiB, 1024}, {"reserveFloorGiB", bp.ReserveFloorGiB, 1024}, {"reserveFullDeviceGiB", bp.ReserveFullDeviceGiB, 1e6},
			{"smallDeviceGiB", bp.SmallDeviceGiB, 1e6}} {
			// An overhead past these bounds (a second per iteration) is a typo, not a measurement.
			if !(f.v >= 0 && f.v <= f.max) {
				return fmt.Errorf("backends.%s.%s: %g must be in [0, %g]", b, f.name, f.v, f.max)
			}
		}
		for arch, v := range bp.MoELayerUsByArch {
			if !slices.Contains(catalog.Architectures, arch) {
				return fmt.Errorf("backends.%s.moeLayerUsByArch.%s: unknown architecture; want one of %s", b, arch, strings.Join(catalog.Architectures, ", "))
			}
			if !(v >= 0 && v <= 100000) {
				return fmt.Errorf("backends.%s.moeLayerUsByArch.%s: %g must be in [0, 100000]", b, arch, v)
			}
		}
		if !(bp.FrontendParallel >= 0 && bp.FrontendParallel <= 1) {
			return fmt.Errorf("backends.%s.frontendParallel: %g must be a share in [0, 1]", b, bp.FrontendParallel)
		}
		if bp.PoolKnee != 0 && !(bp.PoolKnee >= 1 && bp.PoolKnee <= 1000) {
			return fmt.Errorf("backends.%s.poolKnee: %g must be 0 (the default, %g) or in [1, 1000]", b, bp.PoolKnee, DefaultPoolKnee)
		}
		if bp.ADPBalanceIters < 0 || bp.ADPBalanceIters > 10000 {
			return fmt.Errorf("backends.%s.adpBalanceIters: %d must be in [0, 10000]", b, bp.ADPBalanceIters)
		}
		if bp.MaxBatchedTokens <= 0 || bp.MaxSeqs <= 0 || bp.MaxBatchedTokens > 10_000_000 || bp.MaxSeqs > 1_000_000 ||
			bp.SmallDeviceMaxBatchedTokens < 0 || bp.SmallDeviceMaxSeqs < 0 || bp.SmallDeviceMaxBatchedTokens > 10_000_000 || bp.SmallDeviceMaxSeqs > 1_000_000 {
			return fmt.Errorf("backends.%s: maxBatchedTokens (%d) and maxSeqs (%d) must be > 0, at most 10,000,000 and 1,000,000", b, bp.MaxBatchedTokens, bp.MaxSeqs)
		}
		if !(bp.MemoryUtilization > 0 && bp.MemoryUtilization <= 1) {
			return fmt.Errorf("backends.%s.memoryUtilization: must be in (0, 1]", b)
		}
		if bp.ReserveGiB < 0 || bp.ReserveFloorGiB < 0 || bp.ReserveFloorGiB > bp.ReserveGiB || bp.ReserveFullDeviceGiB < 0 {
			return fmt.Errorf("backends.%s: reserveGiB (%g) and reserveFloorGiB (%g) must be >= 0 with the floor <= reserveGiB, reserveFullDeviceGiB (%g) >= 0",
				b, bp.ReserveGiB, bp.ReserveFloorGiB, bp.ReserveFullDeviceGiB)
		}
	}
	c := p.Comm
	if !(c.NetworkLatencyUs >= 0 && c.NetworkLatencyUs <= 1e6) || !(c.P2PLatencyUs >= 0 && c.P2PLatencyUs <= 1e6) {
		return fmt.Errorf("comm: networkLatencyUs %g and p2pLatencyUs %g must be in [0, 1e6]", c.NetworkLatencyUs, c.P2PLatencyUs)
	}
	if !(c.AllReduceBusEfficiency > 0 && c.AllReduceBusEfficiency <= 1.5) || !(c.NetworkGBps > 0 && c.NetworkGBps <= 1e5) {
		return fmt.Errorf("comm: allReduceBusEfficiency must be in (0, 1.5] (NVLink SHARP exceeds the per-link rate) and networkGBps > 0")
	}
	if p.Intervals != nil {
		return p.Intervals.validate()
	}
	return nil
}

// computePrecisionKey checks a per-precision key: GEMMs compute at bf16,
// fp8, fp4 or int8 (weight-only formats compute at bf16).
func computePrecisionKey(p catalog.Precision) error {
	switch p {
	case catalog.BF16, catalog.FP8, catalog.FP4, catalog.INT8:
		return nil
	}
	return fmt.Errorf("not a compute precision; want bf16, fp8, fp4 or int8")
}
