package catalog

import "fmt"

// Model is a transformer's architecture, as far as serving cost depends on it.
type Model struct {
	Name                  string    `json:"name"`
	Aliases               []string  `json:"aliases,omitempty"`
	Architecture          string    `json:"architecture,omitempty"`
	Layers                int       `json:"layers"`
	HiddenSize            int       `json:"hiddenSize"`
	AttentionHeads        int       `json:"attentionHeads"`
	KVHeads               int       `json:"kvHeads"`
	HeadDim               int       `json:"headDim"`
	IntermediateSize      int       `json:"intermediateSize"`
	MoE                   *MoE      `json:"moe,omitempty"`
	MLA                   *MLA      `json:"mla,omitempty"`
	SlidingWindow         int       `json:"slidingWindow,omitempty"`
	SlidingWindowLayers   int       `json:"slidingWindowLayers,omitempty"`
	VocabSize             int       `json:"vocabSize"`
	TieWordEmbeddings     bool      `json:"tieWordEmbeddings,omitempty"`
	MaxPositionEmbeddings int       `json:"maxPositionEmbeddings,omitempty"`
	NativeDtype           Precision `json:"nativeDtype,omitempty"`
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

// AttentionParams is the weight count of one layer's attention projections.
func (m *Model) AttentionParams() float64 {
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

// FullAttentionLayers is the number of layers whose KV grows with the context.
func (m *Model) FullAttentionLayers() int {
	if m.SlidingWindow > 0 {
		return m.Layers - m.SlidingWindowLayers
	}
	return m.Layers
}

// KVBytesPerToken is the KV-cache size of one token of context across all
// layers at precision p, counting sliding-window layers as full until the
// window is reached (the worst case for short contexts is the same).
func (m *Model) KVBytesPerToken(p Precision) float64 {
	return float64(m.FullAttentionLayers()) * m.KVElementsPerTokenLayer() * p.Bytes()
}

// Validate checks that the architecture is complete enough to cost.
func (m *Model) Validate() error {
	req := []struct {
		name string
		v    int
	}{{"layers", m.Layers}, {"hiddenSize", m.HiddenSize}, {"attentionHeads", m.AttentionHeads},
		{"vocabSize", m.VocabSize}}
	for _, r := range req {
		if r.v <= 0 || r.v > 10_000_000 {
			return fmt.Errorf("model %q: %s: %d must be 1 to 10,000,000", m.Name, r.name, r.v)
		}
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
	for _, r := range []struct {
		name string
		v    int
	}{{"intermediateSize", m.IntermediateSize}, {"kvHeads", m.KVHeads}, {"headDim", m.HeadDim}, {"maxPositionEmbeddings", m.MaxPositionEmbeddings},
		{"slidingWindow", m.SlidingWindow}, {"slidingWindowLayers", m.SlidingWindowLayers}} {
		if r.v < 0 || r.v > 100_000_000 {
			return fmt.Errorf("model %q: %s: %d must be 0 to 100,000,000", m.Name, r.name, r.v)
		}
	}
	if m.Layers > 10_000 || m.AttentionHeads > 100_000 {
		return fmt.Errorf("model %q: layers %d (at most 10,000) and attentionHeads %d (at most 100,000)", m.Name, m.Layers, m.AttentionHeads)
	}
	if m.MoE != nil && (m.MoE.Experts > 100_000 || m.MoE.SharedExperts < 0 || m.MoE.FirstDenseLayers < 0 || m.MoE.FirstDenseLayers > m.Layers) {
		return fmt.Errorf("model %q: moe: experts %d (at most 100,000), sharedExperts %d and firstDenseLayers %d (0 to layers) out of range",
			m.Name, m.MoE.Experts, m.MoE.SharedExperts, m.MoE.FirstDenseLayers)
	}
	if m.SlidingWindowLayers > m.Layers {
		return fmt.Errorf("model %q: slidingWindowLayers (%d) exceeds layers (%d)", m.Name, m.SlidingWindowLayers, m.Layers)
	}
	if m.NativeDtype != "" {
		if _, err := ParsePrecision(string(m.NativeDtype)); err != nil {
			return fmt.Errorf("model %q: nativeDtype: %w", m.Name, err)
		}
	}
	return nil
}
