package manifest

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gpuplane/gpuplane/internal/configure"
)

// Speculative is the draft the decoding workers run, as the search priced
// it (configure.Request's SpecTokens and SpecAccept).
type Speculative struct {
	// Tokens is drafted per step; Accept the mean tokens gained a step,
	// which only the emulated engine takes.
	Tokens int
	Accept float64
	// Draft is an EAGLE-3 draft model; empty: the model's own MTP layers.
	Draft string
}

// drafts reports whether workers of p decode and o asks for a draft: a
// prefill worker only makes the first token.
func (o *Options) drafts(p *configure.Pool) bool {
	return o.Spec != nil && o.Spec.Tokens > 0 && p.Role != "prefill"
}

// specArgs is the command-line flags that turn on the draft, for the
// engines that take it on the command line (TensorRT-LLM reads it from its
// options file: specOptions).
func (o *Options) specArgs(p *configure.Pool) []string {
	if !o.drafts(p) {
		return nil
	}
	s, k := o.Spec, itoa(o.Spec.Tokens)
	switch o.Backend {
	case Emulate:
		return []string{"--spec-tokens", k, "--spec-accept", strconv.FormatFloat(s.Accept, 'g', -1, 64)}
	case "sglang":
		// SGLang runs MTP layers through its EAGLE path, one draft a step.
		a := []string{"--speculative-algorithm", "EAGLE"}
		if s.Draft != "" {
			a = []string{"--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", s.Draft}
		}
		return append(a, "--speculative-num-steps", k, "--speculative-eagle-topk", "1",
			"--speculative-num-draft-tokens", itoa(s.Tokens+1))
	case "vllm":
		cfg := map[string]any{"method": "mtp", "num_speculative_tokens": s.Tokens}
		if s.Draft != "" {
			cfg = map[string]any{"method": "eagle3", "model": s.Draft, "num_speculative_tokens": s.Tokens}
		}
		b, _ := json.Marshal(cfg) // a map of strings and ints always marshals
		return []string{"--speculative-config", string(b)}
	}
	return nil
}

// specOptions is TensorRT-LLM's speculative_config for its options file.
func (o *Options) specOptions(p *configure.Pool) string {
	if !o.drafts(p) || o.Backend != "trtllm" {
		return ""
	}
	if d := o.Spec.Draft; d != "" {
		return fmt.Sprintf("speculative_config:\n  decoding_type: Eagle\n  max_draft_len: %d\n  speculative_model_dir: %s\n  eagle3_one_model: true\n",
			o.Spec.Tokens, strconv.Quote(d))
	}
	return fmt.Sprintf("speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: %d\n", o.Spec.Tokens)
}
