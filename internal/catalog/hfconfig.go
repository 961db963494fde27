package catalog

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gpuplane/gpuplane/internal/strict"
)

// hfConfig is the subset of a Hugging Face config.json that shapes serving
// cost. Other keys (tokenizer ids, rope details, ...) do not change the cost.
type hfConfig struct {
	NameOrPath            string   `json:"_name_or_path"`
	Architectures         []string `json:"architectures"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	HiddenSize            int      `json:"hidden_size"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	IntermediateSize      int      `json:"intermediate_size"`
	VocabSize             int      `json:"vocab_size"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	TorchDtype            string   `json:"torch_dtype"`
	Dtype                 string   `json:"dtype"`
	NumExperts            int      `json:"num_experts"`
	NumLocalExperts       int      `json:"num_local_experts"`
	NRoutedExperts        int      `json:"n_routed_experts"`
	NumExpertsPerTok      int      `json:"num_experts_per_tok"`
	MoEIntermediateSize   int      `json:"moe_intermediate_size"`
	NSharedExperts        int      `json:"n_shared_experts"`
	FirstKDenseReplace    int      `json:"first_k_dense_replace"`
	KVLoraRank            int      `json:"kv_lora_rank"`
	QLoraRank             int      `json:"q_lora_rank"`
	QKNopeHeadDim         int      `json:"qk_nope_head_dim"`
	QKRopeHeadDim         int      `json:"qk_rope_head_dim"`
	VHeadDim              int      `json:"v_head_dim"`
	SlidingWindow         *int     `json:"sliding_window"`
	LayerTypes            []string `json:"layer_types"`
	// Gated delta-net hybrids (Qwen3-Next, Qwen3.5).
	FullAttentionInterval        int `json:"full_attention_interval"`
	LinearNumKeyHeads            int `json:"linear_num_key_heads"`
	LinearNumValueHeads          int `json:"linear_num_value_heads"`
	LinearKeyHeadDim             int `json:"linear_key_head_dim"`
	LinearValueHeadDim           int `json:"linear_value_head_dim"`
	LinearConvKernelDim          int `json:"linear_conv_kernel_dim"`
	SharedExpertIntermediateSize int `json:"shared_expert_intermediate_size"`
	// DeepSeek sparse attention (DeepSeek-V3.2, GLM-5).
	IndexTopK          int             `json:"index_topk"`
	IndexNHeads        int             `json:"index_n_heads"`
	IndexHeadDim       int             `json:"index_head_dim"`
	QuantizationConfig *hfQuantization `json:"quantization_config"`
	TextConfig         *hfConfig       `json:"text_config"`
}

type hfQuantization struct {
	QuantMethod string `json:"quant_method"`
	Format      string `json:"fmt"`
}

// LoadHFConfig reads a Hugging Face config.json into a Model. name overrides
// the model name; when empty the config's _name_or_path or the file name is used.
func LoadHFConfig(path, name string) (*Model, error) {
	b, err := strict.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model config: %w", err)
	}
	m, err := parseHFConfig(b, name, strings.TrimSuffix(path, ".json"))
	if err != nil {
		return nil, fmt.Errorf("model config %s: %w", path, err)
	}
	return m, nil
}

// ParseHFConfig converts config.json bytes into a Model. name overrides the
// model name; when empty the config's _name_or_path is used.
func ParseHFConfig(b []byte, name string) (*Model, error) { return parseHFConfig(b, name, "") }

// parseHFConfig is ParseHFConfig with the name to use when neither name nor
// the config gives one.
func parseHFConfig(b []byte, name, fallback string) (*Model, error) {
	var c hfConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("parse config.json: %w", strict.NameTypeError(err))
	}
	if c.NumHiddenLayers == 0 && c.TextConfig != nil {
		// Multimodal checkpoints keep the language model under text_config.
		tc := *c.TextConfig
		if tc.NameOrPath == "" {
			tc.NameOrPath = c.NameOrPath
		}
		if len(tc.Architectures) == 0 {
			tc.Architectures = c.Architectures
		}
		c = tc
	}
	m := &Model{
		Name:                  firstNonEmpty(name, c.NameOrPath, fallback),
		Layers:                c.NumHiddenLayers,
		HiddenSize:            c.HiddenSize,
		AttentionHeads:        c.NumAttentionHeads,
		KVHeads:               c.NumKeyValueHeads,
		HeadDim:               c.HeadDim,
		IntermediateSize:      c.IntermediateSize,
		VocabSize:             c.VocabSize,
		TieWordEmbeddings:     c.TieWordEmbeddings,
		MaxPositionEmbeddings: c.MaxPositionEmbeddings,
	}
	if len(c.Architectures) > 0 {
		m.Architecture = c.Architectures[0]
	}
	if m.KVHeads == 0 {
		m.KVHeads = m.AttentionHeads // multi-head attention
	}
	if m.HeadDim == 0 && m.AttentionHeads > 0 {
		m.HeadDim = m.HiddenSize / m.AttentionHeads
	}
	experts := max(c.NumExperts, c.NumLocalExperts, c.NRoutedExperts)
	if err := routingDeclared(&c, experts); err != nil {
		return nil, err
	}
	if experts > 0 && c.NumExpertsPerTok > 0 {
		inter := c.MoEIntermediateSize
		if inter == 0 {
			inter = c.IntermediateSize
		}
		m.MoE = &MoE{Experts: experts, ExpertsPerToken: c.NumExpertsPerTok, SharedExperts: c.NSharedExperts,
			IntermediateSize: inter, FirstDenseLayers: c.FirstKDenseReplace}
		if c.NSharedExperts == 0 && c.SharedExpertIntermediateSize > 0 && inter > 0 {
			// Qwen-style: one shared expert, sized in expert widths.
			m.MoE.SharedExperts = max(1, (c.SharedExpertIntermediateSize+inter/2)/inter)
		}
	}
	if lin, err := linearLayers(&c); err != nil {
		return nil, err
	} else if lin > 0 {
		m.Linear = &LinearAttention{Layers: lin, KeyHeads: c.LinearNumKeyHeads, ValueHeads: c.LinearNumValueHeads,
			KeyHeadDim: c.LinearKeyHeadDim, ValueHeadDim: c.LinearValueHeadDim, ConvKernel: c.LinearConvKernelDim}
	}
	if c.KVLoraRank > 0 {
		m.MLA = &MLA{KVLoraRank: c.KVLoraRank, QLoraRank: c.QLoraRank, QKNopeHeadDim: c.QKNopeHeadDim,
			QKRopeHeadDim: c.QKRopeHeadDim, VHeadDim: c.VHeadDim}
		m.HeadDim = c.VHeadDim
	}
	if c.IndexTopK > 0 || c.IndexNHeads > 0 {
		m.Sparse = &SparseAttention{TopK: c.IndexTopK, IndexHeads: c.IndexNHeads, IndexHeadDim: c.IndexHeadDim}
	}
	if c.SlidingWindow != nil && *c.SlidingWindow < 0 {
		return nil, fmt.Errorf("sliding_window: %d; give the window in tokens (> 0), or null for full attention", *c.SlidingWindow)
	}
	if c.SlidingWindow != nil && *c.SlidingWindow > 0 {
		sliding := 0
		for _, t := range c.LayerTypes {
			if t == "sliding_attention" {
				sliding++
			}
		}
		if len(c.LayerTypes) == 0 {
			sliding = m.Layers // every layer slides (Mistral-style)
		}
		if sliding > 0 {
			m.SlidingWindow = *c.SlidingWindow
			m.SlidingWindowLayers = sliding
		}
	}
	m.NativeDtype = BF16
	if c.QuantizationConfig != nil {
		switch q := strings.ToLower(c.QuantizationConfig.QuantMethod); {
		case q == "mxfp4":
			m.NativeDtype, m.FP4Format = FP4, MXFP4
		case q == "nvfp4" || strings.Contains(q, "fp4"):
			m.NativeDtype = FP4
		case q == "fp8" || strings.Contains(c.QuantizationConfig.Format, "e4m3"):
			m.NativeDtype = FP8
		}
	}
	if m.Layers > 0 && m.AttentionHeads == 0 && m.Linear == nil {
		// A state-space or other attention-free network: say so, rather
		// than that one number is zero.
		return nil, fmt.Errorf("num_attention_heads: missing or 0 in a %s config; gpuplane prices transformer decoders (attention, MLA, MoE, gated delta-net hybrids): give the heads, or, for an attention-free network (state-space, RWKV), it has no model of it", firstNonEmpty(m.Architecture, "config.json"))
	}
	if err := m.Validate(); err != nil {
		return nil, hfKeys(err)
	}
	return m, nil
}

// routingDeclared refuses a config that gives half of a mixture of
// experts: priced as a dense model, its MoE layers would be dropped
// without a word.
func routingDeclared(c *hfConfig, experts int) error {
	perToken := c.NumExpertsPerTok
	switch {
	case min(c.NumExperts, c.NumLocalExperts, c.NRoutedExperts, perToken) < 0:
		return fmt.Errorf("num_experts %d, num_local_experts %d, n_routed_experts %d and num_experts_per_tok %d must not be negative", c.NumExperts, c.NumLocalExperts, c.NRoutedExperts, perToken)
	case experts > 1 && perToken == 0:
		return fmt.Errorf("num_experts_per_tok: missing in a config with %d routed experts (num_experts, num_local_experts or n_routed_experts); give how many experts each token is routed to", experts)
	case perToken > 0 && experts <= 0:
		return fmt.Errorf("num_experts_per_tok: %d in a config without routed experts; give their number (num_experts, num_local_experts or n_routed_experts), or drop num_experts_per_tok for a dense model", perToken)
	}
	return nil
}

// hfKeyOf is the config.json key of each catalog field a validation error
// can name.
var hfKeyOf = map[string]string{
	"layers": "num_hidden_layers", "hiddenSize": "hidden_size", "attentionHeads": "num_attention_heads",
	"kvHeads": "num_key_value_heads", "headDim": "head_dim", "intermediateSize": "intermediate_size",
	"vocabSize": "vocab_size", "maxPositionEmbeddings": "max_position_embeddings", "slidingWindow": "sliding_window",
	"experts": "num_experts (or n_routed_experts)", "expertsPerToken": "num_experts_per_tok",
	"moe.intermediateSize": "moe_intermediate_size",
}

// catalogField finds those fields in an error's text, the longest names
// first so that moe.intermediateSize is not read as intermediateSize.
var catalogField = func() *regexp.Regexp {
	names := make([]string, 0, len(hfKeyOf))
	for n := range hfKeyOf {
		names = append(names, regexp.QuoteMeta(n))
	}
	sort.Slice(names, func(i, j int) bool {
		return len(names[i]) > len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
	})
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}()

// hfKeys adds to a validation error the config.json keys of the catalog
// fields it names, so that the fix can be found in the file.
func hfKeys(err error) error {
	var keys []string
	seen := map[string]bool{}
	for _, f := range catalogField.FindAllString(err.Error(), -1) {
		if !seen[f] {
			seen[f] = true
			keys = append(keys, f+" is "+hfKeyOf[f])
		}
	}
	if len(keys) == 0 {
		return err
	}
	return fmt.Errorf("%w (in config.json: %s)", err, strings.Join(keys, ", "))
}

// linearLayers counts gated delta-net layers: from layer_types when given,
// else every layer but each full_attention_interval-th.
func linearLayers(c *hfConfig) (int, error) {
	if c.LinearNumValueHeads == 0 && c.FullAttentionInterval == 0 {
		return 0, nil
	}
	n := 0
	for _, t := range c.LayerTypes {
		if t == "linear_attention" {
			n++
		}
	}
	if len(c.LayerTypes) == 0 {
		if c.FullAttentionInterval < 1 {
			return 0, fmt.Errorf("full_attention_interval: %d; a hybrid model needs it (or layer_types) to say which layers are full attention", c.FullAttentionInterval)
		}
		n = c.NumHiddenLayers - c.NumHiddenLayers/c.FullAttentionInterval
	}
	if n > 0 && (c.LinearNumValueHeads < 1 || c.LinearNumKeyHeads < 1 || c.LinearKeyHeadDim < 1 || c.LinearValueHeadDim < 1) {
		return 0, fmt.Errorf("linear_num_key_heads, linear_num_value_heads, linear_key_head_dim and linear_value_head_dim: %d, %d, %d, %d; all must be > 0 for %d linear-attention layers",
			c.LinearNumKeyHeads, c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim, n)
	}
	return n, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
