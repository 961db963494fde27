package catalog

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

func TestDefaultCatalogLoads(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a10", "l4", "l40s", "a100_40gb", "a100_80gb", "h100_sxm", "h100_nvl", "h200_sxm", "b200_sxm",
		"b300_sxm", "gb200", "gb300", "rtx_pro_6000"}
	for _, n := range want {
		if _, err := c.GPU(n); err != nil {
			t.Errorf("GPU %s: %v", n, err)
		}
	}
	for _, m := range []string{"Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-235B-A22B",
		"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.3-70B-Instruct",
		"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1", "mistralai/Mixtral-8x7B-v0.1", "openai/gpt-oss-120b"} {
		if _, err := c.Model(m); err != nil {
			t.Errorf("model %s: %v", m, err)
		}
	}
}

// TestCalibrationSystemNamesResolve: every GPU the measured data names
// resolves (the GH200 is not in the shared reference table, so its facts,
// the H100's compute at 4 TB/s and 96 GB of HBM3, are checked here).
func TestCalibrationSystemNamesResolve(t *testing.T) {
	c := MustDefault()
	for alias, want := range map[string]string{"h100_sxm": "h100_sxm", "h200_sxm": "h200_sxm", "b200_sxm": "b200_sxm",
		"b300_sxm": "b300_sxm", "gb200": "gb200", "gb300": "gb300", "H100 SXM 80GB": "h100_sxm",
		"A100-80GB SXM": "a100_80gb", "NVIDIA H200": "h200_sxm", "RTX PRO 6000 Blackwell Server": "rtx_pro_6000", "GH200 480GB": "gh200"} {
		g, err := c.GPU(alias)
		if err != nil {
			t.Errorf("%q: %v", alias, err)
			continue
		}
		if g.Name != want {
			t.Errorf("%q resolved to %s, want %s", alias, g.Name, want)
		}
	}
	gh, err := c.GPU("GH200 480GB")
	h100, err2 := c.GPU("h100_sxm")
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	if gh.PeakTFLOPS(FP8) != h100.PeakTFLOPS(FP8) || gh.MemoryBandwidthGBps != 4000 || gh.MemoryGiB < 89 || gh.MemoryGiB > 96 || gh.GPUsPerNode != 1 {
		t.Errorf("gh200 facts: %+v", gh)
	}
}

// TestGPUFactsMatchReference cross-checks the embedded catalog against the
// project's reference table, so a typo in the data file fails a test.
func TestGPUFactsMatchReference(t *testing.T) {
	f, err := os.Open(sharedtest.Path(t, "reference", "gpus.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	c := MustDefault()
	checked := 0
	for _, r := range rows[1:] {
		g, err := c.GPU(strings.TrimSpace(r[col["gpu"]]))
		if err != nil {
			t.Errorf("reference GPU %q is not in the catalog: %v", r[col["gpu"]], err)
			continue
		}
		num := func(k string) float64 {
			v, _ := strconv.ParseFloat(r[col[k]], 64)
			return v
		}
		checks := []struct {
			what      string
			got, want float64
		}{
			{"sm_count", float64(g.SMCount), num("sm_count")},
			{"mem_bw_GBps", g.MemoryBandwidthGBps, num("mem_bw_GBps")},
			{"bf16_dense_tflops", g.TFLOPS[BF16], num("bf16_dense_tflops")},
			{"fp8_dense_tflops", g.TFLOPS[FP8], num("fp8_dense_tflops")},
			{"fp4_dense_tflops", g.TFLOPS[FP4], num("fp4_dense_tflops")},
			{"nvlink_GBps_per_gpu_per_dir", g.NVLinkGBpsPerDir, num("nvlink_GBps_per_gpu_per_dir")},
			{"pcie_GBps_per_dir", g.PCIeGBpsPerDir, num("pcie_GBps_per_dir")},
		}
		for _, ch := range checks {
			if math.Abs(ch.got-ch.want) > 1e-6*math.Max(1, ch.want) {
				t.Errorf("%s %s: catalog %g, reference %g", g.Name, ch.what, ch.got, ch.want)
			}
		}
		// Usable memory is what the driver reports: a little under the nominal size.
		if nominal := num("memory_gb"); g.MemoryGiB > nominal || g.MemoryGiB < 0.9*nominal {
			t.Errorf("%s memoryGiB %g is not just under the nominal %g GB", g.Name, g.MemoryGiB, nominal)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d reference rows checked", checked)
	}
}

func TestModelParameterCounts(t *testing.T) {
	c := MustDefault()
	cases := []struct {
		model          string
		total, active  float64 // billions
		kvBytesPerTokn float64 // bf16, all layers
	}{
		{"meta-llama/Llama-3.1-8B", 8.03, 8.03, 131072},
		{"meta-llama/Llama-3.1-70B", 70.6, 70.6, 327680},
		{"Qwen/Qwen3-32B", 32.8, 32.8, 262144},
		{"Qwen/Qwen3-8B", 8.2, 8.2, 147456},
		{"Qwen/Qwen3-30B-A3B", 30.5, 3.3, 98304},
		{"Qwen/Qwen3-235B-A22B", 235, 22.2, 192512},
		{"mistralai/Mixtral-8x7B-v0.1", 46.7, 12.9, 131072},
		{"deepseek-ai/DeepSeek-V3", 671, 37.5, 70272},
		{"moonshotai/Kimi-K2.5", 1040, 32.6, 70272},
		{"MiniMaxAI/MiniMax-M2.5", 229, 11, 253952}, // 10B active without its 1.2B of embeddings
		// Small models for 4-24 GB devices (tied embeddings).
		{"Qwen/Qwen3-0.6B", 0.6, 0.6, 114688},
		{"Qwen/Qwen3-1.7B", 1.72, 1.72, 114688},
		{"Qwen/Qwen3-4B", 4.02, 4.02, 147456},
		{"meta-llama/Llama-3.2-1B", 1.24, 1.24, 32768},
		{"meta-llama/Llama-3.2-3B", 3.21, 3.21, 114688},
		// Common checkpoints of the measurement campaigns; published totals.
		{"Qwen/Qwen3-14B", 14.8, 14.8, 163840},
		{"Qwen/Qwen2.5-72B-Instruct", 72.7, 72.7, 327680},
		{"Qwen/Qwen2.5-32B-Instruct", 32.76, 32.76, 262144},
		{"meta-llama/Llama-3.1-405B-Instruct-FP8", 405, 405, 516096},
		{"mistralai/Mixtral-8x22B-Instruct-v0.1", 141, 39, 229376},
		{"openai/gpt-oss-20b", 20.9, 4.2, 24576}, // 3.6B active without the 0.6B embedding table; 12 of 24 layers slide
		{"Qwen/Qwen3-Coder-480B-A35B-Instruct", 480, 35, 253952},
		{"zai-org/GLM-4.6", 355, 33.5, 376832},     // published 355B counts the MTP layer, 32B active no embeddings
		{"zai-org/GLM-4.5-Air", 106, 13.4, 188416}, // 12B active without its 1.2B of embeddings
		{"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", 235, 22.2, 192512},
	}
	for _, tc := range cases {
		m, err := c.Model(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.TotalParams() / 1e9; math.Abs(got-tc.total)/tc.total > 0.03 {
			t.Errorf("%s total params %.2fB, want about %.1fB", tc.model, got, tc.total)
		}
		if got := m.ActiveParams() / 1e9; math.Abs(got-tc.active)/tc.active > 0.05 {
			t.Errorf("%s active params %.2fB, want about %.1fB", tc.model, got, tc.active)
		}
		if got := m.KVBytesPerToken(BF16); got != tc.kvBytesPerTokn {
			t.Errorf("%s KV bytes/token %g, want %g", tc.model, got, tc.kvBytesPerTokn)
		}
	}
}

func TestDevices(t *testing.T) {
	c := MustDefault()
	cases := []struct {
		gpu, slice   string
		kind         string
		memGiB       float64
		compute, bw  float64
		wantErrMatch string
	}{
		{"h100_sxm", "", "gpu", 79.6, 1, 1, ""},
		{"h100_sxm", "3g.40gb", SliceMIG, 39.5, 60.0 / 132, 0.5, ""},
		{"h100_sxm:1g.10gb", "", SliceMIG, 9.75, 16.0 / 132, 0.125, ""},
		{"a10", "1/2", SliceVGPU, 12, 0.5, 0.5, ""},
		{"a10", "1/6", SliceVGPU, 4, 1.0 / 6, 1.0 / 6, ""},
		{"rtx_pro_6000", "1/8", SliceVGPU, 11.2, 0.125, 0.125, ""},
		{"h100_sxm", "3g.41gb", "", 0, 0, 0, "closest: 3g.40gb"},
		{"a10", "3g.40gb", "", 0, 0, 0, "no MIG profiles"},
		{"h100_sxm", "3/2", "", 0, 0, 0, "0 < n <= d"},
		{"h100_sxm:3g.40gb", "1g.10gb", "", 0, 0, 0, "give it once"},
	}
	for _, tc := range cases {
		d, err := c.Device(tc.gpu, tc.slice)
		if tc.wantErrMatch != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrMatch) {
				t.Errorf("%s %s: error %v, want one containing %q", tc.gpu, tc.slice, err, tc.wantErrMatch)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tc.gpu, tc.slice, err)
			continue
		}
		if d.Kind != tc.kind || d.MemoryGiB != tc.memGiB || math.Abs(d.ComputeFraction-tc.compute) > 1e-9 || math.Abs(d.BandwidthFraction-tc.bw) > 1e-9 {
			t.Errorf("%s %s: got %+v", tc.gpu, tc.slice, d)
		}
	}
	if n := len(c.Devices()); n < 70 {
		t.Errorf("only %d devices listed", n)
	}
}

func TestUnknownNamesSuggestClosest(t *testing.T) {
	c := MustDefault()
	_, err := c.GPU("h100-sxm5")
	if err == nil || !strings.Contains(err.Error(), "h100_sxm") {
		t.Errorf("GPU typo: %v", err)
	}
	_, err = c.Model("Qwen/Qwen3-33B")
	if err == nil || !strings.Contains(err.Error(), "Qwen/Qwen3-32B") {
		t.Errorf("model typo: %v", err)
	}
}

func TestHFConfig(t *testing.T) {
	m, err := LoadHFConfig("testdata/qwen3-like-config.json", "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "example/Qwen3-Tiny" || m.Layers != 28 || m.KVHeads != 8 || m.HeadDim != 128 || !m.TieWordEmbeddings || m.MoE != nil {
		t.Fatalf("parsed %+v", m)
	}
	d, err := LoadHFConfig("testdata/moe-mla-config.json", "example/dsv3")
	if err != nil {
		t.Fatal(err)
	}
	if d.MLA == nil || d.MLA.KVLoraRank != 512 || d.MoE == nil || d.MoE.Experts != 256 || d.MoE.FirstDenseLayers != 3 || d.NativeDtype != FP8 {
		t.Fatalf("parsed %+v", d)
	}
	ref := MustDefault()
	v3, _ := ref.Model("deepseek-ai/DeepSeek-V3")
	if math.Abs(d.TotalParams()-v3.TotalParams()) > 1 {
		t.Fatalf("config-loaded DeepSeek-V3 has %g params, catalog %g", d.TotalParams(), v3.TotalParams())
	}
	if _, err := ParseHFConfig([]byte(`{"num_hidden_layers": 2}`), "x"); err == nil {
		t.Fatal("an incomplete config must be rejected")
	}
}

func TestUserCatalogFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "extra.yaml")
	os.WriteFile(good, []byte(`
gpus:
- name: mygpu
  productName: Example GPU
  architecture: hopper
  smCount: 100
  memoryGiB: 40
  memoryBandwidthGBps: 2000
  tflops: {bf16: 500, fp8: 1000}
  pcieGBpsPerDir: 32
vgpu:
- {gpu: mygpu, fraction: "1/4", memoryGiB: 10}
`), 0o644)
	c := MustDefault()
	if err := c.LoadFile(good); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Device("mygpu", "1/4"); err != nil || d.MemoryGiB != 10 {
		t.Fatalf("user device: %+v %v", d, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("gpus:\n- name: x\n  memoryGB: 3\n"), 0o644)
	err := c.LoadFile(bad)
	if err == nil || !strings.Contains(err.Error(), "memoryGB") {
		t.Fatalf("unknown field must be named: %v", err)
	}
}

func TestPrecisions(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Precision
		bytes float64
	}{
		{"bf16", BF16, 2}, {"awq", W4A16, 0.516}, {"GPTQ", W4A16, 0.516}, {"w4a16", W4A16, 0.516},
		{"w8a8", INT8, 1}, {"int8", INT8, 1}, {"nvfp4", FP4, 0.5625}, {"fp8", FP8, 1},
		{"int4_wo", W4A16, 0.516}, // the kernel tables' and calibration rows' name for int4 weight-only
	} {
		got, err := ParsePrecision(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParsePrecision(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		if b := got.Bytes(); math.Abs(b-tc.bytes) > 0.001 {
			t.Errorf("%s: %.4f bytes per weight, want %.4f", tc.in, b, tc.bytes)
		}
	}
	if _, err := ParsePrecision("int3"); err == nil || !strings.Contains(err.Error(), "w4a16") {
		t.Errorf("unknown precision error %v should list w4a16", err)
	}
	c := MustDefault()
	a10, _ := c.GPU("a10")
	h100, _ := c.GPU("h100_sxm")
	for _, tc := range []struct {
		g    *GPU
		p    Precision
		want float64
	}{
		{a10, W4A16, a10.TFLOPS[BF16]},      // weight-only: bf16 tensor cores
		{a10, INT8, 2 * a10.TFLOPS[BF16]},   // int8 tensor cores
		{a10, FP8, a10.TFLOPS[BF16]},        // Ampere has no fp8: dequantised
		{h100, W4A16, h100.TFLOPS[BF16]},    // weight-only also on Hopper
		{h100, INT8, 2 * h100.TFLOPS[BF16]}, // as fast as fp8
	} {
		if got := tc.g.PeakTFLOPS(tc.p); got != tc.want {
			t.Errorf("%s %s: peak %g TFLOPS, want %g", tc.g.Name, tc.p, got, tc.want)
		}
	}
}

func TestQuantizedCheckpointNames(t *testing.T) {
	c := MustDefault()
	for _, tc := range []struct {
		name, model string
		p           Precision
	}{
		{"Qwen/Qwen3-8B-AWQ", "Qwen/Qwen3-8B", W4A16},
		{"Qwen/Qwen3-4B-AWQ", "Qwen/Qwen3-4B", W4A16},
		{"Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B", FP8},
		{"meta-llama/Llama-3.2-3B-Instruct-quantized.w8a8", "meta-llama/Llama-3.2-3B", INT8},
		{"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen/Qwen3-235B-A22B", FP8},
		{"zai-org/GLM-4.5-Air-FP8", "zai-org/GLM-4.5-Air", FP8},
	} {
		m, p, ok := c.QuantizedCheckpoint(tc.name)
		if !ok || m != tc.model || p != tc.p {
			t.Errorf("QuantizedCheckpoint(%q) = %q, %q, %v; want %q, %q", tc.name, m, p, ok, tc.model, tc.p)
		}
	}
	if _, _, ok := c.QuantizedCheckpoint("Qwen/Qwen3-8B"); ok {
		t.Error("an unquantised name was taken for a checkpoint")
	}
}

// A catalog file with nonsense numbers is refused with the field.
func TestCatalogFileRanges(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"negative tflops":  {"gpus:\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: 3000, pcieGBpsPerDir: 64, tflops: {bf16: -5}}\n", "tflops.bf16"},
		"NaN bandwidth":    {"gpus:\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: .nan, pcieGBpsPerDir: 64, tflops: {bf16: 500}}\n", "gpus[0].memoryBandwidthGBps: .nan (line 2) is not a finite number"},
		"NaN fraction":     {"mig:\n- {gpu: h100_sxm, profile: 9g.1gb, memoryFraction: .nan, sms: 10, memoryGiB: 10, maxInstances: 1}\n", "mig[0].memoryFraction: .nan (line 2) is not a finite number"},
		"huge layers":      {"models:\n- {name: m/x, architecture: LlamaForCausalLM, layers: 100000000, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, intermediateSize: 14336, vocabSize: 128256}\n", "layers"},
		"two documents":    {"gpus: []\n---\nmodels: []\n", "YAML documents"},
		"fp8 below bf16":   {"gpus:\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: 3000, pcieGBpsPerDir: 64, tflops: {bf16: 500, fp8: 50}}\n", "tflops.fp8: 50 is below tflops.bf16 500"},
		"capability":       {"gpus:\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: 3000, pcieGBpsPerDir: 64, tflops: {bf16: 500}, computeCapability: banana}\n", `computeCapability: "banana"`},
		"gpu twice":        {"gpus:\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: 3000, pcieGBpsPerDir: 64, tflops: {bf16: 500}}\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: 3000, pcieGBpsPerDir: 64, tflops: {bf16: 500}}\n", `gpus[1].name: "x1" is given twice in the file (first at gpus[0].name)`},
		"alias of another": {"gpus:\n- {name: x1, productName: X1, architecture: hopper, smCount: 100, memoryGiB: 80, memoryBandwidthGBps: 3000, pcieGBpsPerDir: 64, tflops: {bf16: 500}, aliases: [H100]}\n", `gpus[0].aliases[0]: "H100" already names gpu "h100_sxm"`},
		"model twice":      {"models:\n- {name: m/x, architecture: LlamaForCausalLM, layers: 32, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, intermediateSize: 14336, vocabSize: 128256}\n- {name: m/x, architecture: LlamaForCausalLM, layers: 32, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, intermediateSize: 14336, vocabSize: 128256}\n", `models[1].name: "m/x" is given twice`},
		"model alias":      {"models:\n- {name: m/x, architecture: LlamaForCausalLM, layers: 32, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, intermediateSize: 14336, vocabSize: 128256, aliases: [qwen3-32b]}\n", `already names model "Qwen/Qwen3-32B"`},
		"mig twice":        {"mig:\n- {gpu: h100_sxm, profile: 3g.40gb, memoryFraction: 0.5, sms: 60, memoryGiB: 40, maxInstances: 2}\n- {gpu: h100_sxm, profile: 3g.40gb, memoryFraction: 0.5, sms: 60, memoryGiB: 40, maxInstances: 2}\n", `mig[1]: "h100_sxm 3g.40gb" is given twice`},
	} {
		f := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(f, []byte(tc.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := MustDefault().LoadFile(f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, tc.want)
		}
	}
}

// Gated delta-net hybrids: the linear layers keep a state, not a KV cache,
// and a config that cannot say which layers are linear is an error naming
// the field.
func TestHFConfigHybridLinearAttention(t *testing.T) {
	m, err := LoadHFConfig("testdata/hybrid-linear-config.json", "example/next")
	if err != nil {
		t.Fatal(err)
	}
	if m.Linear == nil || m.Linear.Layers != 36 || m.FullAttentionLayers() != 12 || m.MoE.SharedExperts != 1 {
		t.Fatalf("parsed %+v (linear %+v), %d full-attention layers", m, m.Linear, m.FullAttentionLayers())
	}
	// The catalog entry of the same architecture costs the same.
	next, err := MustDefault().Model("qwen3-next-80b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.TotalParams()-next.TotalParams()) > 1 || m.KVBytesPerToken(BF16) != next.KVBytesPerToken(BF16) {
		t.Fatalf("config: %g params, %g KV B/token; catalog: %g, %g", m.TotalParams(), m.KVBytesPerToken(BF16), next.TotalParams(), next.KVBytesPerToken(BF16))
	}
	// KV grows only in the 12 full layers: 2 x 2 heads x 256 x 2 bytes each.
	if got := m.KVBytesPerToken(BF16); got != 12*2*2*256*2 {
		t.Errorf("KV bytes per token %g, want %d", got, 12*2*2*256*2)
	}
	// fp32 state 32 x 128 x 128 plus a 3-wide conv window over q, k, v in bf16.
	if got, want := m.Linear.StateBytes(), float64(32*128*128*4+3*(2*16*128+32*128)*2); got != want {
		t.Errorf("state bytes per layer %g, want %g", got, want)
	}
	for name, spoil := range map[string]string{
		"full_attention_interval":                             `"full_attention_interval": 0, "linear_num_value_heads": 32`,
		"linear_num_key_heads":                                `"linear_num_key_heads": 0`,
		"linearAttention.layers (48) and slidingWindowLayers": `"full_attention_interval": 100`,
	} {
		b, _ := os.ReadFile("testdata/hybrid-linear-config.json")
		key := strings.SplitN(spoil, ":", 2)[0]
		bad := strings.Replace(string(b), "\n  "+key+":", "\n  \"_ignored\":", 1)
		bad = strings.Replace(bad, "{\n", "{\n  "+spoil+",\n", 1)
		if _, err := ParseHFConfig([]byte(bad), "x"); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	q35, err := MustDefault().Model("Qwen/Qwen3.5-397B-A17B")
	if err != nil {
		t.Fatal(err)
	}
	// The name's sizes: 397B in all, 17B active.
	if tot, act := q35.TotalParams()/1e9, q35.ActiveParams()/1e9; math.Abs(tot-397) > 8 || math.Abs(act-17) > 1.5 {
		t.Errorf("Qwen3.5-397B-A17B: %.1fB params, %.1fB active", tot, act)
	}
}

func TestHFConfigSparseAttention(t *testing.T) {
	b, err := os.ReadFile("testdata/moe-mla-config.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "{", `{"index_topk": 2048, "index_n_heads": 64, "index_head_dim": 128,`, 1)
	m, err := ParseHFConfig([]byte(cfg), "example/v32")
	if err != nil {
		t.Fatal(err)
	}
	v32, _ := MustDefault().Model("deepseek-ai/DeepSeek-V3.2")
	if m.Sparse == nil || *m.Sparse != *v32.Sparse || m.KVBytesPerToken(FP8) != v32.KVBytesPerToken(FP8) {
		t.Fatalf("parsed sparse %+v, KV %g B/token; catalog %+v, %g", m.Sparse, m.KVBytesPerToken(FP8), v32.Sparse, v32.KVBytesPerToken(FP8))
	}
	bad := strings.Replace(string(b), "{", `{"index_topk": 2048,`, 1)
	if _, err := ParseHFConfig([]byte(bad), "x"); err == nil || !strings.Contains(err.Error(), "sparseAttention.indexHeads") {
		t.Errorf("index_topk without index heads: %v", err)
	}
	glm, _ := MustDefault().Model("zhipuai/GLM-5")
	if tot, act := glm.TotalParams()/1e9, glm.ActiveParams()/1e9; math.Abs(tot-744) > 10 || math.Abs(act-40) > 2 {
		t.Errorf("GLM-5: %.1fB params, %.1fB active; published 744B and 40B", tot, act)
	}
}

// The same weights republished under another publisher resolve to the
// catalog model, with a quantised checkpoint's precision; a repository name
// that is no model's stays unknown.
func TestRepublishedCheckpoints(t *testing.T) {
	c := MustDefault()
	for name, want := range map[string]string{
		"nvidia/Qwen3-32B-FP8":               "Qwen/Qwen3-32B",
		"RedHatAI/Llama-3.1-8B-Instruct-FP8": "meta-llama/Llama-3.1-8B",
		"nvidia/DeepSeek-R1-0528-FP4":        "deepseek-ai/DeepSeek-R1",
	} {
		m, p, ok := c.QuantizedCheckpoint(name)
		if !ok || m != want || p == "" {
			t.Errorf("%s: checkpoint of %q at %q (%v), want %s", name, m, p, ok, want)
		}
	}
	// Distilled checkpoints that keep their base model's architecture.
	for name, want := range map[string]string{
		"deepseek-ai/DeepSeek-R1-Distill-Llama-70B": "meta-llama/Llama-3.3-70B-Instruct",
		"deepseek-ai/DeepSeek-R1-Distill-Llama-8B":  "meta-llama/Llama-3.1-8B",
	} {
		if m, err := c.Model(name); err != nil || m.Name != want {
			t.Errorf("%s: %v, %v, want %s", name, m, err, want)
		}
	}
	if m, err := c.Model("someone/Qwen3-8B"); err != nil || m.Name != "Qwen/Qwen3-8B" {
		t.Errorf("someone/Qwen3-8B: %v, %v", m, err)
	}
	if _, err := c.Model("someone/NoSuchModel-7B"); err == nil || !strings.Contains(err.Error(), "unknown model") {
		t.Errorf("an unknown repository: %v", err)
	}
	// Two models sharing a repository name resolve to neither.
	var extra strings.Builder
	extra.WriteString("models:\n")
	for _, org := range []string{"orgA", "orgB"} {
		fmt.Fprintf(&extra, "- {name: %s/Twin-1B, architecture: LlamaForCausalLM, layers: 2, hiddenSize: 64, attentionHeads: 2, kvHeads: 2, headDim: 32, intermediateSize: 128, vocabSize: 1000}\n", org)
	}
	f := filepath.Join(t.TempDir(), "twins.yaml")
	if err := os.WriteFile(f, []byte(extra.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c2 := MustDefault()
	if err := c2.LoadFile(f); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Model("orgC/Twin-1B"); err == nil {
		t.Error("orgC/Twin-1B resolved, though two models share the repository name")
	}
	if m, err := c2.Model("orgB/Twin-1B"); err != nil || m.Name != "orgB/Twin-1B" {
		t.Errorf("orgB/Twin-1B by its own name: %v, %v", m, err)
	}
}

func TestContextNote(t *testing.T) {
	m := &Model{Name: "m", MaxPositionEmbeddings: 100}
	for _, tc := range []struct {
		tokens int
		want   string
	}{{99, ""}, {100, ""}, {101, "101 tokens exceeds m's context of 100"}} {
		got := m.ContextNote(tc.tokens)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%d tokens: %q, want %q", tc.tokens, got, tc.want)
		}
	}
	if got := (&Model{Name: "u"}).ContextNote(1 << 30); got != "" {
		t.Errorf("unknown context: %q, want no note", got)
	}
}

// A config.json that does not validate is told in its own keys.
func TestHFConfigErrorsNameItsKeys(t *testing.T) {
	base := `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_attention_heads":32,"num_hidden_layers":32,"intermediate_size":14336,"vocab_size":128256`
	for _, tc := range []struct{ doc, want string }{
		{strings.Replace(base, `"num_attention_heads":32`, `"num_attention_heads":0`, 1) + "}", "num_attention_heads: missing or 0 in a LlamaForCausalLM config"},
		{`{"architectures":["MambaForCausalLM"],"hidden_size":768,"num_hidden_layers":24,"vocab_size":50280,"state_size":16}`, "attention-free network (state-space, RWKV)"},
		{strings.Replace(base, `"hidden_size":4096`, `"hidden_size":4096.5`, 1) + "}", "hidden_size: 4096.5 where a whole number is expected"},
		{strings.Replace(base, `"num_hidden_layers":32`, `"num_hidden_layers":0`, 1) + "}", "(in config.json: layers is num_hidden_layers)"},
		{base + `,"num_key_value_heads":5}`, "attentionHeads is num_attention_heads, kvHeads is num_key_value_heads"},
		{base + `,"num_experts":8,"num_experts_per_tok":9}`, "expertsPerToken is num_experts_per_tok"},
		{base + `,"num_local_experts":8}`, "num_experts_per_tok: missing in a config with 8 routed experts"},
		{base + `,"num_experts_per_tok":2}`, "num_experts_per_tok: 2 in a config without routed experts"},
		{base + `,"n_routed_experts":-8,"num_experts_per_tok":2}`, "n_routed_experts -8 and num_experts_per_tok 2 must not be negative"},
		{base + `,"sliding_window":-4096}`, "sliding_window: -4096; give the window in tokens (> 0), or null"},
	} {
		if _, err := ParseHFConfig([]byte(tc.doc), "x"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}
