package catalog

import (
	"fmt"
	"strconv"
)

// Model is a transformer's architecture, as far as serving cost depends on it.
type Model struct {
	Name             string   `json:"name"`
	Aliases          []string `json:"aliases,omitempty"`
	Architecture     string   `json:"architecture,omitempty"`
	Layers           int      `json:"layers"`
	HiddenSize       int      `json:"hiddenSize"`
	AttentionHeads   int      `json:"attentionHeads"`
	KVHeads          int      `json:"kvHeads"`
	HeadDim          int      `json:"headDim"`
	IntermediateSize int      `json:"intermediateSize"`
	MoE              *MoE     `json:"moe,omitempty"`
	MLA              *MLA     `json:"mla,omitempty"`
	// Linear is set for hybrid models whose other layers are gated
	// delta-net (linear attention) layers.
	Linear *LinearAttention `json:"linearAttention,omitempty"`
	// Sparse is set for DeepSeek sparse attention (DeepSeek-V3.2, GLM-5):
	// a lightning indexer picks the keys each query attends to.
	Sparse                *SparseAttention `json:"sparseAttention,omitempty"`
	SlidingWindow         int              `json:"slidingWindow,omitempty"`
	SlidingWindowLayers   int              `json:"slidingWindowLayers,omitempty"`
	VocabSize             int              `json:"vocabSize"`
	TieWordEmbeddings     bool             `json:"tieWordEmbeddings,omitempty"`
	MaxPositionEmbeddings int              `json:"maxPositionEmbeddings,omitempty"`
	NativeDtype           Precision        `json:"nativeDtype,omitempty"`
	// FP4Format is how a checkpoint of fp4 weights scales them: MXFP4
	// (one 8-bit exponent per 32 values, gpt-oss) or NVFP4 (an fp8 scale
	// per 16, ModelOpt checkpoints); empty means NVFP4. Engines serve the
	// two with different fused-MoE kernels.
	FP4Format FP4Format `json:"fp4Format,omitempty"`
}

// FP4Format names a block-scaled fp4 format.
type FP4Format string

// The fp4 formats checkpoints ship.
const (
	MXFP4 FP4Format = "mxfp4"
	NVFP4 FP4Format = "nvfp4"
)

// ExpertsMXFP4 says whether the model's experts, held in w, are MXFP4:
// its own checkpoint is MXFP4 and w is that checkpoint's fp4.
func (m *Model) ExpertsMXFP4(w Precision) bool {
	return w == FP4 && m.NativeDtype == FP4 && m.FP4Format == MXFP4
}

// MoE describes mixture-of-experts feed-forward layers.
type MoE struct {
	Experts          int `json:"experts"`
	ExpertsPerToken  int `json:"expertsPerToken"`
	SharedExperts    int `json:"sharedExperts,omitempty"`
	IntermediateSize int `json:"intermediateSize"`
	// FirstDenseLayers is how many leading layers use a dense MLP instead.
	FirstDenseLayers int `json:"firstDenseLayers,omitempty"`
}

// MLA describes multi-head latent attention (DeepSeek-V2/V3).
type MLA struct {
	KVLoraRank    int `json:"kvLoraRank"`
	QLoraRank     int `json:"qLoraRank,omitempty"`
	QKNopeHeadDim int `json:"qkNopeHeadDim"`
	QKRopeHeadDim int `json:"qkRopeHeadDim"`
	VHeadDim      int `json:"vHeadDim"`
}

// SparseAttention describes DeepSeek sparse attention: every layer keeps
// the whole cache (plus the indexer's keys), an indexer of IndexHeads x
// IndexHeadDim scores all cached tokens, and attention reads the TopK best.
type SparseAttention struct {
	TopK         int `json:"topK"`
	IndexHeads   int `json:"indexHeads"`
	IndexHeadDim int `json:"indexHeadDim"`
}

// IndexBytesPerTokenLayer is the indexer's cached key of one token in one
// layer: fp8 values and an fp32 scale.
func (s *SparseAttention) IndexBytesPerTokenLayer() float64 { return float64(s.IndexHeadDim) + 4 }

// LinearAttention describes gated delta-net layers (Qwen3-Next, Qwen3.5):
// each keeps a recurrent state per sequence, a keyHeadDim x valueHeadDim
// matrix per value head, instead of a KV cache that grows with the context.
type LinearAttention struct {
	// Layers is how many of the model's layers are linear.
	Layers       int `json:"layers"`
	KeyHeads     int `json:"keyHeads"`
	ValueHeads   int `json:"valueHeads"`
	KeyHeadDim   int `json:"keyHeadDim"`
	ValueHeadDim int `json:"valueHeadDim"`
	// ConvKernel is the short causal convolution's width (its last
	// ConvKernel-1 inputs are kept per sequence).
	ConvKernel int `json:"convKernel,omitempty"`
}

// Params is the weight count of one linear layer: the q, k, v and output
// gate projections, the per-head decay and beta, and the output projection.
func (l *LinearAttention) Params(hidden int) float64 {
	h := float64(hidden)
	kd, vd := float64(l.KeyHeads*l.KeyHeadDim), float64(l.ValueHeads*l.ValueHeadDim)
	return h*(2*kd+2*vd) + h*2*float64(l.ValueHeads) + vd*h
}

// StateBytes is one sequence's recurrent state in one linear layer: the
// fp32 state matrices (engines keep them in fp32 for stability) and the
// convolution's window in bf16.
func (l *LinearAttention) StateBytes() float64 {
	st := float64(l.ValueHeads*l.KeyHeadDim*l.ValueHeadDim) * 4
	conv := float64(max(l.ConvKernel-1, 0)*(2*l.KeyHeads*l.KeyHeadDim+l.ValueHeads*l.ValueHeadDim)) * 2
	return st + conv
}

// LinearLayers is how many layers are linear attention.
func (m *Model) LinearLayers() int {
	if m.Linear == nil {
		return 0
	}
	return m.Linear.Layers
}

// AttentionParams is the weight count of one layer's attention projections,
// averaged over the layers when some are linear attention.
func (m *Model) AttentionParams() float64 {
	if n := m.LinearLayers(); n > 0 {
		full := float64(m.Layers - n)
		return (full*m.softmaxAttentionParams() + float64(n)*m.Linear.Params(m.HiddenSize)) / float64(m.Layers)
	}
	return m.softmaxAttentionParams()
}

func (m *Model) softmaxAttentionParams() float64 {
	h := float64(m.HiddenSize)
	if m.MLA != nil {
		a := m.MLA
		heads := float64(m.AttentionHeads)
		q := h * float64(a.QKNopeHeadDim+a.QKRopeHeadDim) * heads
		if a.QLoraRank > 0 {
			q = h*float64(a.QLoraRank) + float64(a.QLoraRank)*heads*float64(a.QKNopeHeadDim+a.QKRopeHeadDim)
		}
		kv := h*float64(a.KVLoraRank+a.QKRopeHeadDim) + float64(a.KVLoraRank)*heads*float64(a.QKNopeHeadDim+a.VHeadDim)
		o := heads * float64(a.VHeadDim) * h
		return q + kv + o
	}
	qo := 2 * h * float64(m.AttentionHeads*m.HeadDim)
	kv := 2 * h * float64(m.KVHeads*m.HeadDim)
	return qo + kv
}

// DenseMLPParams is the weight count of one gated dense MLP.
func (m *Model) DenseMLPParams() float64 {
	return 3 * float64(m.HiddenSize) * float64(m.IntermediateSize)
}

// ExpertParams is the weight count of one routed expert.
func (m *Model) ExpertParams() float64 {
	if m.MoE == nil {
		return 0
	}
	return 3 * float64(m.HiddenSize) * float64(m.MoE.IntermediateSize)
}

// MoELayers is how many layers route through experts.
func (m *Model) MoELayers() int {
	if m.MoE == nil {
		return 0
	}
	return m.Layers - m.MoE.FirstDenseLayers
}

// EmbeddingParams counts the input embedding and the output head.
func (m *Model) EmbeddingParams() float64 {
	e := float64(m.VocabSize) * float64(m.HiddenSize)
	if m.TieWordEmbeddings {
		return e
	}
	return 2 * e
}

// TotalParams is the model's weight count.
func (m *Model) TotalParams() float64 {
	n := float64(m.Layers) * m.AttentionParams()
	dense := m.Layers - m.MoELayers()
	n += float64(dense) * m.DenseMLPParams()
	if m.MoE != nil {
		per := float64(m.MoE.Experts+m.MoE.SharedExperts)*m.ExpertParams() + float64(m.HiddenSize*m.MoE.Experts)
		n += float64(m.MoELayers()) * per
	}
	return n + m.EmbeddingParams()
}

// ActiveParams is the weight count one token passes through.
func (m *Model) ActiveParams() float64 {
	if m.MoE == nil {
		return m.TotalParams()
	}
	n := float64(m.Layers)*m.AttentionParams() + float64(m.Layers-m.MoELayers())*m.DenseMLPParams()
	n += float64(m.MoELayers()) * float64(m.MoE.ExpertsPerToken+m.MoE.SharedExperts) * m.ExpertParams()
	return n + m.EmbeddingParams()
}

// KVElementsPerTokenLayer is the number of cached elements one token adds in
// one layer: K and V for every KV head, or the compressed latent for MLA.
func (m *Model) KVElementsPerTokenLayer() float64 {
	if m.MLA != nil {
		return float64(m.MLA.KVLoraRank + m.MLA.QKRopeHeadDim)
	}
	return 2 * float64(m.KVHeads*m.HeadDim)
}

// ContextNote says, for a request of tokens prompt and output tokens, that
// it exceeds the model's context (max_position_embeddings), and "" when it
// does not or the context is unknown. Engines refuse such requests unless
// the model is served with RoPE scaling; an answer that assumes it is
// says so with this note.
func (m *Model) ContextNote(tokens int) string {
	if m.MaxPositionEmbeddings <= 0 || tokens <= m.MaxPositionEmbeddings {
		return ""
	}
	return fmt.Sprintf("isl + osl = %d tokens exceeds %s's context of %d (max_position_embeddings): engines refuse such requests unless the model is served with RoPE scaling (YaRN) extending it; the answer assumes it is",
		tokens, m.Name, m.MaxPositionEmbeddings)
}

// FullAttentionLayers is the number of layers whose KV grows with the context.
func (m *Model) FullAttentionLayers() int {
	n := m.Layers - m.LinearLayers()
	if m.SlidingWindow > 0 {
		n -= m.SlidingWindowLayers
	}
	return n
}

// KVBytesPerToken is the KV-cache size of one token of context across all
// layers at precision p, counting sliding-window layers as full until the
// window is reached (the worst case for short contexts is the same).
func (m *Model) KVBytesPerToken(p Precision) float64 {
	per := m.KVElementsPerTokenLayer() * p.Bytes()
	if m.Sparse != nil {
		per += m.Sparse.IndexBytesPerTokenLayer()
	}
	return float64(m.FullAttentionLayers()) * per
}

// Validate checks that the architecture is complete enough to cost.
func (m *Model) Validate() error {
	if err := m.inRange("", 1, 10_000_000, field{"layers", m.Layers}, field{"hiddenSize", m.HiddenSize},
		field{"attentionHeads", m.AttentionHeads}, field{"vocabSize", m.VocabSize}); err != nil {
		return err
	}
	if m.MLA == nil {
		if m.KVHeads <= 0 || m.HeadDim <= 0 {
			return fmt.Errorf("model %q: kvHeads and headDim must be > 0", m.Name)
		}
		if m.AttentionHeads%m.KVHeads != 0 {
			return fmt.Errorf("model %q: attentionHeads (%d) must be a multiple of kvHeads (%d)", m.Name, m.AttentionHeads, m.KVHeads)
		}
	}
	if m.MoE == nil && m.IntermediateSize <= 0 {
		return fmt.Errorf("model %q: intermediateSize must be > 0", m.Name)
	}
	if m.MoE != nil {
		if m.MoE.Experts <= 0 || m.MoE.ExpertsPerToken <= 0 || m.MoE.ExpertsPerToken > m.MoE.Experts {
			return fmt.Errorf("model %q: moe needs 0 < expertsPerToken <= experts", m.Name)
		}
		if m.MoE.IntermediateSize <= 0 {
			return fmt.Errorf("model %q: moe.intermediateSize must be > 0", m.Name)
		}
		if m.MoE.FirstDenseLayers > 0 && m.IntermediateSize <= 0 {
			return fmt.Errorf("model %q: moe.firstDenseLayers needs intermediateSize", m.Name)
		}
	}
	if err := m.inRange("", 0, 100_000_000, field{"intermediateSize", m.IntermediateSize}, field{"kvHeads", m.KVHeads},
		field{"headDim", m.HeadDim}, field{"maxPositionEmbeddings", m.MaxPositionEmbeddings},
		field{"slidingWindow", m.SlidingWindow}, field{"slidingWindowLayers", m.SlidingWindowLayers}); err != nil {
		return err
	}
	if m.Layers > 10_000 || m.AttentionHeads > 100_000 {
		return fmt.Errorf("model %q: layers %d (at most 10,000) and attentionHeads %d (at most 100,000)", m.Name, m.Layers, m.AttentionHeads)
	}
	if m.MoE != nil && (m.MoE.Experts > 100_000 || m.MoE.SharedExperts < 0 || m.MoE.FirstDenseLayers < 0 || m.MoE.FirstDenseLayers > m.Layers) {
		return fmt.Errorf("model %q: moe: experts %d (at most 100,000), sharedExperts %d and firstDenseLayers %d (0 to layers) out of range",
			m.Name, m.MoE.Experts, m.MoE.SharedExperts, m.MoE.FirstDenseLayers)
	}
	if sp := m.Sparse; sp != nil {
		if err := m.inRange("sparseAttention.", 1, 10_000_000, field{"topK", sp.TopK}, field{"indexHeads", sp.IndexHeads},
			field{"indexHeadDim", sp.IndexHeadDim}); err != nil {
			return err
		}
		if m.SlidingWindow > 0 || m.Linear != nil {
			return fmt.Errorf("model %q: sparseAttention with sliding-window or linear-attention layers is not modelled", m.Name)
		}
	}
	if l := m.Linear; l != nil {
		if err := m.inRange("linearAttention.", 1, 100_000, field{"layers", l.Layers}, field{"keyHeads", l.KeyHeads},
			field{"valueHeads", l.ValueHeads}, field{"keyHeadDim", l.KeyHeadDim}, field{"valueHeadDim", l.ValueHeadDim}); err != nil {
			return err
		}
		if err := m.inRange("linearAttention.", 0, 1024, field{"convKernel", l.ConvKernel}); err != nil {
			return err
		}
		if l.Layers+m.SlidingWindowLayers >= m.Layers {
			return fmt.Errorf("model %q: linearAttention.layers (%d) and slidingWindowLayers (%d) leave no full-attention layer of %d; a model with none has no KV cache to cost",
				m.Name, l.Layers, m.SlidingWindowLayers, m.Layers)
		}
	}
	if m.SlidingWindowLayers > m.Layers {
		return fmt.Errorf("model %q: slidingWindowLayers (%d) exceeds layers (%d)", m.Name, m.SlidingWindowLayers, m.Layers)
	}
	if m.NativeDtype != "" {
		if _, err := ParsePrecision(string(m.NativeDtype)); err != nil {
			return fmt.Errorf("model %q: nativeDtype: %w", m.Name, err)
		}
	}
	switch m.FP4Format {
	case "", NVFP4:
	case MXFP4:
		if m.NativeDtype != FP4 {
			return fmt.Errorf("model %q: fp4Format %q needs nativeDtype fp4, not %q", m.Name, m.FP4Format, m.NativeDtype)
		}
	default:
		return fmt.Errorf("model %q: fp4Format %q is not an fp4 format; use mxfp4 (gpt-oss) or nvfp4 (ModelOpt), or leave it out", m.Name, m.FP4Format)
	}
	return nil
}

// field is a named count of a model, for range checks.
type field struct {
	name string
	v    int
}

// inRange names the first field outside [lo, hi], with the model and the
// field's path (prefix, as "moe." or "").
func (m *Model) inRange(prefix string, lo, hi int, fs ...field) error {
	for _, f := range fs {
		if f.v < lo || f.v > hi {
			return fmt.Errorf("model %q: %s%s: %d must be %s to %s", m.Name, prefix, f.name, f.v, thousands(lo), thousands(hi))
		}
	}
	return nil
}

// thousands writes n with comma separators, as the messages always have.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
