package perf

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// The attention terms fitted to the kernel tables each price what their
// names say, from a base without them.
func TestAttentionTableTerms(t *testing.T) {
	const model, gpu = "Qwen/Qwen3-32B", "h100_sxm"
	base := MustDefaultParams().Clone()
	h := base.Families[catalog.Hopper]
	h.AttentionCallUs, h.DecodeAttentionCallUs, h.DecodeAttentionSeqUs, h.AttentionPrefillBandwidth = 0, 0, 0, 0
	cfg := Config{Backend: VLLM, Weights: catalog.FP8, TP: 1}
	w0 := catalogWorker(t, model, gpu, "", cfg, base)
	layers := float64(w0.cfg.Model.Layers)
	with := func(set func(*FamilyParams)) *Worker {
		p := base.Clone()
		set(p.Families[catalog.Hopper])
		return catalogWorker(t, model, gpu, "", cfg, p)
	}

	calls := with(func(f *FamilyParams) { f.AttentionCallUs, f.DecodeAttentionCallUs = 20, 7 })
	if got, want := decodeStep(calls, 4, 1000)-decodeStep(w0, 4, 1000), layers*7e-6; math.Abs(got-want) > 1e-9 {
		t.Errorf("decode call cost added %.4g s to a decode step, want %.4g s", got, want)
	}
	if got, want := prefillStep(calls, 512)-prefillStep(w0, 512), layers*20e-6; math.Abs(got-want) > 1e-9 {
		t.Errorf("prefill call cost added %.4g s to a prompt step, want %.4g s", got, want)
	}

	perSeq := with(func(f *FamilyParams) { f.DecodeAttentionSeqUs = 0.5 })
	for _, n := range []int{1, 64} {
		if got, want := decodeStep(perSeq, n, 1000)-decodeStep(w0, n, 1000), layers*float64(n)*0.5e-6; math.Abs(got-want) > 1e-9 {
			t.Errorf("%d sequences: per-sequence cost added %.4g s, want %.4g s", n, got, want)
		}
	}

	// Queries and outputs at a low bandwidth bound short prompts, not long ones.
	qo := with(func(f *FamilyParams) { f.AttentionPrefillBandwidth = 0.05 })
	short, long := prefillStep(qo, 64)/prefillStep(w0, 64), prefillStep(qo, 16384)/prefillStep(w0, 16384)
	if short < 1.05 || long > short || long > 1.05 {
		t.Errorf("prefill bandwidth 0.05: a 64-token prompt step %.3fx, a 16k one %.3fx; want the short one slowed, the long one not", short, long)
	}

	p := base.Clone()
	p.Families[catalog.Hopper].AttentionPrefillBandwidth = 1.5
	if err := p.Validate(); err == nil {
		t.Error("attentionPrefillBandwidth 1.5 validated")
	}
	p = base.Clone()
	p.Families[catalog.Hopper].DecodeAttentionSeqUs = math.NaN()
	if err := p.Validate(); err == nil {
		t.Error("decodeAttentionSeqUs NaN validated")
	}
}
