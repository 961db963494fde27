package perf

// StepPart is one share of an iteration's time, as StepBreakdown splits it.
type StepPart int

// The shares of an iteration. Every term of StepTime falls in exactly one.
const (
	// PartDenseGEMM is the attention projections, dense MLPs and shared experts.
	PartDenseGEMM StepPart = iota
	// PartExperts is the routed experts (fused MoE) and their all-to-all.
	PartExperts
	// PartAttention is prefill and decode attention: the cache read per
	// context token, sliding windows, sparse top-k reads and the sparse
	// indexer, linear-attention state and per-call and per-sequence costs.
	PartAttention
	// PartCommunication is the tensor-parallel all-reduces and the
	// pipeline's stage-to-stage transfers.
	PartCommunication
	// PartElementwise is norms, activations and rotary embeddings.
	PartElementwise
	// PartOutputHead is the vocabulary projection of the sampling sequences.
	PartOutputHead
	// PartDraft is the draft passes of speculative decoding.
	PartDraft
	// PartOverheads is the engine's own time: per step, per sequence, per
	// prompt iteration and the MoE layers' fixed cost.
	PartOverheads
	// PartPromptFloor is what an iteration with prompt tokens waits beyond
	// its work for the MoE prompt floor (host-side work of the MoE path).
	PartPromptFloor
	numParts
)

var partNames = [numParts]string{"dense_gemm", "experts", "attention", "communication", "elementwise", "output_head", "draft", "overheads", "moe_prompt_floor"}

// String is the part's name in reports (snake case, as JSON keys).
func (p StepPart) String() string {
	if p < 0 || p >= numParts {
		return "unknown"
	}
	return partNames[p]
}

// StepParts lists every part in report order.
func StepParts() []StepPart {
	out := make([]StepPart, numParts)
	for i := range out {
		out[i] = StepPart(i)
	}
	return out
}

// StepBreakdown is an iteration's time split into parts, in seconds; the
// parts sum to StepTime.
type StepBreakdown [numParts]float64

// Total is the iteration's time.
func (s StepBreakdown) Total() float64 {
	t := 0.0
	for _, v := range s {
		t += v
	}
	return t
}

// parts accumulates a StepBreakdown while a step is priced; nil prices the
// step alone, which is the hot path.
type parts StepBreakdown

// add records scale*v under k and returns v, so that a cost can be priced
// and recorded in one expression without changing how it is summed.
func (p *parts) add(k StepPart, scale, v float64) float64 {
	if p != nil {
		p[k] += scale * v
	}
	return v
}

// StepBreakdown is StepTime(b) split into its parts.
func (w *Worker) StepBreakdown(b Batch) StepBreakdown {
	var p parts
	w.fixedStep(b, &p)
	p.add(PartAttention, 1, w.decodeCtxCost*b.DecodeCtx)
	return StepBreakdown(p)
}
