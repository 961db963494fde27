package perf

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// MoEKernel is the fused routed-expert kernel of one backend at one weight
// precision on one architecture: the compact summary of its measured kernel
// table (gpuplane calibrate kernels). Fused MoE kernels reach far less of
// the tensor peak than dense GEMMs (grouped GEMMs of a few rows per
// expert, routing, gathers), so pricing experts as dense GEMMs is
// optimistic by 1.5-5x.
type MoEKernel struct {
	// Compute is the fraction of tensor peak reached with many rows per expert.
	Compute float64 `json:"compute"`
	// Bandwidth is the fraction of memory bandwidth reached reading the
	// active experts' weights.
	Bandwidth float64 `json:"bandwidth"`
	// RowsHalf is the rows per active expert at which compute runs at half
	// of Compute (the idle rows of a partly filled tile).
	RowsHalf float64 `json:"rowsHalf"`
	// ParamsHalf is the weights per expert and GPU at which compute runs at
	// half of Compute: small (or finely tp-sliced) experts fill few tiles.
	ParamsHalf float64 `json:"paramsHalf"`
	// LaunchUs is the fixed cost of one eager call (routing, launches).
	LaunchUs float64 `json:"launchUs"`
	// ComputeCapability is the major compute capability of the GPUs the
	// summary was measured on ("10" for B200, B300 and GB200). A GPU of the
	// same architecture but another major (the RTX PRO 6000 is 12.0) runs
	// other kernels; it keeps pricing experts as dense GEMMs. Empty: any.
	ComputeCapability string `json:"computeCapability,omitempty"`
	// Rows and HeldOutMAPEPct record what the summary was fitted on and how
	// it predicts held-out rows of its table.
	Rows           int     `json:"rows,omitempty"`
	HeldOutMAPEPct float64 `json:"heldOutMapePct,omitempty"`
}

// MoEShape is one MoE layer's work on one GPU.
type MoEShape struct {
	// Tokens entering the layer (before top-k expansion), TopK experts each,
	// of Experts routed experts.
	Tokens, TopK, Experts float64
	// ExpertParams is one expert's weights held by this GPU (a tp slice, or a
	// whole expert's share when experts spread over the GPUs).
	ExpertParams float64
	// SliceParams is the weights of the matrices one GPU multiplies per
	// expert: a whole expert under expert parallelism, a tp slice without
	// it. It sets the tile efficiency; 0 means ExpertParams.
	SliceParams float64
	WeightBytes float64
	// Eager calls pay LaunchUs. Engines capture decode-only iterations in
	// CUDA graphs, which replay the layer's kernels without launch gaps;
	// iterations with prompt tokens (and the kernel tables) run eagerly.
	Eager bool
	// Balanced routing spreads the tokens' picks evenly, so it reaches
	// min(Experts, Tokens x TopK) experts, as the kernel tables' balanced
	// rows do. Serving routes each token on its own, and its picks land on
	// experts at random: fewer experts at a few dozen tokens (163 of 256 at
	// 32 tokens with 8 picks, where balanced reaches all 256).
	Balanced bool
	// Ranks is the expert-parallel ranks the experts spread over (0 or 1:
	// none). Under random routing the layer is priced at its busiest rank.
	Ranks float64
}

// ActiveExperts is how many experts hold at least one of the shape's rows.
func (s MoEShape) ActiveExperts() float64 {
	if s.Balanced {
		return math.Min(s.Experts, s.Tokens*s.TopK)
	}
	return s.Experts * (1 - math.Pow(1-s.TopK/s.Experts, s.Tokens))
}

// Seconds prices the shape on a GPU of peak FLOP/s and bw bytes/s.
func (k *MoEKernel) Seconds(s MoEShape, peak, bw float64) float64 {
	active, picks := s.busiestRank()
	slice := s.SliceParams
	if slice <= 0 {
		slice = s.ExpertParams
	}
	size := slice / (slice + k.ParamsHalf)
	// Each active expert's GEMM computes its rows and about RowsHalf rows
	// of idle tile besides: at r rows per active expert, compute runs at
	// r / (r + RowsHalf) of Compute. Taken per active expert, the idle
	// tiles follow the routing: balanced rows of the tables fill every
	// expert at 32 tokens of top-8 of 256, serving's picks 163 of them.
	tc := 2 * (picks + k.RowsHalf*active) * s.ExpertParams / (peak * k.Compute * size)
	tm := active * s.ExpertParams * s.WeightBytes / (bw * k.Bandwidth)
	t := smoothMax(tc, tm)
	if s.Eager {
		t += k.LaunchUs * 1e-6
	}
	return t
}

func (k *MoEKernel) validate(at string) error {
	check := func(name string, v, lo, hi float64, fix string) error {
		if !(v >= lo && v <= hi) {
			return fmt.Errorf("params: %s.%s = %v: %s", at, name, v, fix)
		}
		return nil
	}
	for _, err := range []error{
		check("compute", k.Compute, 1e-3, 1.2, "want a fraction of tensor peak in (0, 1.2]"),
		check("bandwidth", k.Bandwidth, 1e-3, 1.2, "want a fraction of memory bandwidth in (0, 1.2]"),
		check("rowsHalf", k.RowsHalf, 0, 1e5, "want rows per expert in [0, 100000]"),
		check("paramsHalf", k.ParamsHalf, 0, 1e12, "want weights per expert in [0, 1e12]"),
		check("launchUs", k.LaunchUs, 0, 1e5, "want microseconds in [0, 100000]"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// MXFP4 keys the fused-MoE summaries of MXFP4 experts (gpt-oss): fp4
// weights with one 8-bit exponent per 32 values. Engines serve them with
// kernels of their own (TensorRT-LLM's MXFP4 x MXFP8 kernel on Blackwell,
// w4a16 on Hopper), which the kernel tables time apart from NVFP4's: on
// Blackwell the table's MXFP4 calls run 1.25-1.35 times faster than an
// NVFP4 summary prices their shapes.
const MXFP4 catalog.Precision = "mxfp4"

// MoEKey is the key of the summary that prices experts of weight
// precision w: MXFP4 for MXFP4 experts, else w.
func MoEKey(w catalog.Precision, mxfp4 bool) catalog.Precision {
	if mxfp4 && w == catalog.FP4 {
		return MXFP4
	}
	return w
}

// MoEWeights is the weight precision a summary key prices (MXFP4: fp4's
// peak and, near enough, its bytes).
func MoEWeights(key catalog.Precision) catalog.Precision {
	if key == MXFP4 {
		return catalog.FP4
	}
	return key
}

// MoEKernelFor finds the summary for a GPU, backend and weight precision
// (nil: none fitted for its architecture and compute capability; experts
// are then priced as dense GEMMs). A summary that streams weights slower
// than a served kernel does (Plausible) gives way to the fastest plausible
// summary of another backend at the same precision, or to nil.
func (p *Params) MoEKernelFor(g *catalog.GPU, b Backend, w catalog.Precision) *MoEKernel {
	k, _ := p.moeKernelChoice(g, b, w)
	return k
}

// moeKernelChoice is MoEKernelFor with a note, when the backend's own
// summary gave way, of what prices the experts instead.
func (p *Params) moeKernelChoice(g *catalog.GPU, b Backend, w catalog.Precision) (*MoEKernel, string) {
	f := p.Families[g.Architecture]
	if f == nil {
		return nil, ""
	}
	fits := func(k *MoEKernel) bool {
		return k != nil && (k.ComputeCapability == "" || k.ComputeCapability == CCMajor(g.ComputeCapability))
	}
	own := f.MoE[b][w]
	if !fits(own) {
		return nil, ""
	}
	wp := MoEWeights(w)
	peak, bw, wb := g.PeakTFLOPS(wp)*1e12, g.MemoryBandwidthGBps*1e9, wp.Bytes()
	if own.Plausible(peak, bw, wb) {
		return own, ""
	}
	k, from := f.servedMoE(w, fits, peak, bw)
	instead := "as dense GEMMs"
	if k != nil {
		instead = fmt.Sprintf("as %s's %s summary", from, w)
	}
	return k, givesWay(fmt.Sprintf("%s's %s fused-MoE kernel table", b, w), own.DecodeStreaming(peak, bw, wb), g.Name+"'s", instead)
}

// givesWay is the note of a summary that gave way: what table streams
// expert weights at what share of whose bandwidth, and what prices the
// experts instead.
func givesWay(table string, streaming float64, whose, instead string) string {
	return fmt.Sprintf("%s streams expert weights at %.0f%% of %s bandwidth in a decode step, below the %.0f%% a served kernel reaches: experts priced %s",
		table, 100*streaming, whose, 100*slowestServed, instead)
}

// servedMoE is the plausible summary at precision w whose decode streams
// fastest among those fits admits, and its backend, or nil. Backends are
// visited in a fixed order so that a tie always resolves the same way.
func (f *FamilyParams) servedMoE(w catalog.Precision, fits func(*MoEKernel) bool, peak, bw float64) (*MoEKernel, Backend) {
	var best *MoEKernel
	var from Backend
	most := 0.0
	for _, b := range Backends {
		k := f.MoE[b][w]
		if !fits(k) {
			continue
		}
		if s := k.DecodeStreaming(peak, bw, MoEWeights(w).Bytes()); s >= slowestServed && (best == nil || s > most) {
			best, from, most = k, b, s
		}
	}
	return best, from
}

// plausibleShape is the decode step the plausibility bound is taken at:
// 16 tokens, each to 8 of 128 experts of 3 x 4096 x 1536 weights (the
// experts of Qwen3-30B-A3B and Qwen3-235B-A22B), replayed from a graph.
func plausibleShape(wBytes float64) MoEShape {
	return MoEShape{Tokens: 16, TopK: 8, Experts: 128, ExpertParams: 3 * 4096 * 1536, WeightBytes: wBytes}
}

// DecodeStreaming is the share of a GPU's bandwidth (peak and bw as
// Seconds takes them) at which the summary's decode step reads the
// experts' weights of plausibleShape: what the summary means to decode,
// whichever of its numbers carries it. A fit can trade a low bandwidth
// for a low compute at few rows per expert; this reads both.
func (k *MoEKernel) DecodeStreaming(peak, bw, wBytes float64) float64 {
	s := plausibleShape(wBytes)
	t := k.Seconds(s, peak, bw)
	if !(t > 0) {
		return 0
	}
	return s.ActiveExperts() * s.ExpertParams * wBytes / bw / t
}

// Plausible says whether the summary's decode streams weights at no less
// than a served kernel does (slowestServed of the bandwidth). vLLM's w4a16
// MoE tables reach 11% (Blackwell) and 20% (Hopper) where every other
// table reaches 62% or more, and vLLM's own int4 serving runs decode about
// twice as fast as those tables allow: engines serve int4 experts with a
// faster kernel than the one measured.
func (k *MoEKernel) Plausible(peak, bw, wBytes float64) bool {
	return k.DecodeStreaming(peak, bw, wBytes) >= slowestServed
}

// CCMajor is the major part of a compute capability ("12.0" -> "12").
func CCMajor(cc string) string {
	major, _, _ := strings.Cut(cc, ".")
	return major
}

// SameKernels says whether two GPUs run the same kernels: one architecture
// and one major compute capability (the RTX PRO 6000's 12.0 is Blackwell
// with other kernels than the B200's 10.0).
func SameKernels(a, b *catalog.GPU) bool {
	return a.Architecture == b.Architecture && CCMajor(a.ComputeCapability) == CCMajor(b.ComputeCapability)
}
