package perf

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// A backend's cost per MoE layer on one architecture is paid on that
// architecture's GPUs only, beside the backend-wide one, in every
// iteration.
func TestMoELayerCostByArchitecture(t *testing.T) {
	c := catalog.MustDefault()
	m, err := c.Model("Qwen/Qwen3-30B-A3B")
	if err != nil {
		t.Fatal(err)
	}
	p := MustDefaultParams().Clone()
	bp := p.Backends[SGLang]
	bp.MoELayerUs, bp.MoELayerUsByArch = 10, map[string]float64{catalog.Hopper: 25}
	base := MustDefaultParams().Clone()
	base.Backends[SGLang].MoELayerUs, base.Backends[SGLang].MoELayerUsByArch = 10, nil
	decode := Batch{DecodeSeqs: 8, DecodeCtx: 8 * 1000, Sampled: 8}
	prompt := Batch{PrefillTokens: 2048, PrefillSeqs: 1, PrefillPairs: 2048 * 2049 / 2, Sampled: 1}
	for _, gpu := range []string{"h200_sxm", "b200_sxm"} {
		d, err := c.Device(gpu, "")
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Model: m, Device: d, Backend: SGLang, Weights: catalog.FP8, TP: 1}
		w, err := NewWorker(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		w0, err := NewWorker(cfg, base)
		if err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if d.GPU.Architecture == catalog.Hopper {
			want = float64(m.MoELayers()) * 25e-6
		}
		for name, b := range map[string]Batch{"decode": decode, "prompt": prompt} {
			if got := w.StepTime(b) - w0.StepTime(b); math.Abs(got-want) > 1e-9 {
				t.Errorf("%s %s step: the architecture's cost adds %g s, want %g s", gpu, name, got, want)
			}
		}
	}
}

func TestParamsRejectBadMoELayerCostByArchitecture(t *testing.T) {
	for _, tc := range []struct {
		arch string
		v    float64
		want string
	}{
		{"volta", 10, "backends.sglang.moeLayerUsByArch.volta: unknown architecture; want one of ampere, ada, hopper, blackwell"},
		{catalog.Hopper, -1, "backends.sglang.moeLayerUsByArch.hopper: -1 must be in [0, 100000]"},
		{catalog.Hopper, math.NaN(), "backends.sglang.moeLayerUsByArch.hopper: NaN must be in [0, 100000]"},
	} {
		p := MustDefaultParams().Clone()
		p.Backends[SGLang].MoELayerUsByArch = map[string]float64{tc.arch: tc.v}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %g: %v, want %q", tc.arch, tc.v, err, tc.want)
		}
	}
}
