package catalog

import (
	"strings"
	"testing"
)

// The fp4 format a checkpoint states decides which MoE kernel summary
// prices its experts; a format that is not fp4's, or fp4 scaling on a
// checkpoint of other weights, is an error naming the field.
func TestFP4Format(t *testing.T) {
	gptOSS := `{"architectures":["GptOssForCausalLM"],"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"intermediate_size":64,"num_local_experts":8,"num_experts_per_tok":2,"vocab_size":100,"quantization_config":{"quant_method":"%s"}}`
	for _, c := range []struct {
		quant  string
		format FP4Format
	}{{"mxfp4", MXFP4}, {"MXFP4", MXFP4}, {"nvfp4", ""}, {"modelopt_fp4", ""}} {
		m, err := ParseHFConfig([]byte(strings.Replace(gptOSS, "%s", c.quant, 1)), "x/y")
		if err != nil {
			t.Fatalf("%s: %v", c.quant, err)
		}
		if m.NativeDtype != FP4 || m.FP4Format != c.format {
			t.Errorf("quant_method %s: native %s format %q, want fp4 %q", c.quant, m.NativeDtype, m.FP4Format, c.format)
		}
		if got, want := m.ExpertsMXFP4(FP4), c.format == MXFP4; got != want {
			t.Errorf("quant_method %s: MXFP4 experts at fp4 %v, want %v", c.quant, got, want)
		}
		// Served at another precision the experts are not the checkpoint's MXFP4.
		if m.ExpertsMXFP4(FP8) || m.ExpertsMXFP4(BF16) {
			t.Errorf("quant_method %s: MXFP4 experts when served at fp8 or bf16", c.quant)
		}
	}
	m, err := MustDefault().Model("openai/gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	if !m.ExpertsMXFP4(FP4) {
		t.Error("the catalog's gpt-oss-120b: want MXFP4 experts at fp4")
	}
	base := "models:\n- {name: m/x, architecture: LlamaForCausalLM, layers: 2, hiddenSize: 64, attentionHeads: 4, kvHeads: 2, headDim: 16, intermediateSize: 128, vocabSize: 100, nativeDtype: %s, fp4Format: %s}\n"
	for _, c := range []struct{ native, format, want string }{
		{"fp4", "mxfp4", ""},
		{"fp4", "nvfp4", ""},
		{"fp4", "fp4e2m1", `fp4Format "fp4e2m1" is not an fp4 format; use mxfp4 (gpt-oss) or nvfp4 (ModelOpt), or leave it out`},
		{"bf16", "mxfp4", `fp4Format "mxfp4" needs nativeDtype fp4, not "bf16"`},
	} {
		y := strings.Replace(strings.Replace(base, "%s", c.native, 1), "%s", c.format, 1)
		err := MustDefault().add([]byte(y), "test.yaml")
		if c.want == "" && err != nil {
			t.Errorf("%s/%s: %v", c.native, c.format, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s/%s: got %v, want an error with %q", c.native, c.format, err, c.want)
		}
	}
}
