package catalog

import "testing"

// FuzzCatalogFile: a user catalog file loads or is refused, never panics,
// and what loads resolves to devices that validate.
func FuzzCatalogFile(f *testing.F) {
	f.Add([]byte("gpus:\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: 3000, pcieGBpsPerDir: 64, tflops: {bf16: 500}}\n"))
	f.Add([]byte("vgpu:\n- {gpu: a10, fraction: 1/4, memoryGiB: 6}\n"))
	f.Add([]byte("mig:\n- {gpu: h100_sxm, profile: 2g.20gb, memoryFraction: 0.25, sms: 32, memoryGiB: 19.6, maxInstances: 3}\n"))
	f.Add([]byte("models:\n- {name: m/x, architecture: LlamaForCausalLM, layers: 2, hiddenSize: 64, attentionHeads: 4, kvHeads: 2, headDim: 16, intermediateSize: 128, vocabSize: 100}\n"))
	f.Add([]byte("models:\n- {name: m/x, architecture: LlamaForCausalLM, layers: 2, hiddenSize: 64, attentionHeads: 4, kvHeads: 2, headDim: 16, intermediateSize: 128, vocabSize: 100, nativeDtype: fp4, fp4Format: mxfp4}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := MustDefault()
		if err := c.add(b, "fuzz"); err != nil {
			return
		}
		for _, d := range c.Devices() {
			if d.MemoryGiB <= 0 || d.ComputeFraction <= 0 {
				t.Fatalf("accepted device %s with memory %g, compute %g", d.Name(), d.MemoryGiB, d.ComputeFraction)
			}
		}
	})
}

// FuzzHFConfig: any config.json converts or is refused, never panics, and
// a model it yields validates.
func FuzzHFConfig(f *testing.F) {
	f.Add([]byte(`{"architectures":["Qwen3ForCausalLM"],"num_hidden_layers":28,"hidden_size":1024,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"intermediate_size":3072,"vocab_size":151936}`))
	f.Add([]byte(`{"num_hidden_layers":-1}`))
	f.Add([]byte(`{"num_experts":0,"num_experts_per_tok":8}`))
	f.Add([]byte(`{"architectures":["GptOssForCausalLM"],"num_hidden_layers":24,"hidden_size":2880,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"intermediate_size":2880,"num_local_experts":32,"num_experts_per_tok":4,"vocab_size":201088,"quantization_config":{"quant_method":"mxfp4"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseHFConfig(b, "fuzz/model")
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("ParseHFConfig returned a model that does not validate: %v", err)
		}
	})
}
