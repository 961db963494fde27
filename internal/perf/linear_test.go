package perf

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// A gated delta-net hybrid: state slots come out of the cache memory, at
// most half of it, and the sequence cap shrinks to them; each decode
// sequence pays for reading and writing its state; the KV cache and the
// decode attention cover only the full-attention layers.
func TestLinearAttentionStateAndCost(t *testing.T) {
	c := catalog.MustDefault()
	m, err := c.Model("Qwen/Qwen3.5-397B-A17B")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := c.Device("b200_sxm", "")
	cfg := Config{Model: m, Device: d, Backend: SGLang, Weights: catalog.FP8, TP: 4}
	w, err := NewWorker(cfg, MustDefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	mem := w.Memory()
	perSeq := float64(m.Linear.Layers) * m.Linear.StateBytes() / 4
	if math.Abs(mem.StateGiB*gib-perSeq*float64(w.Config().MaxSeqs)) > 1 {
		t.Fatalf("state %.2f GiB for %d sequences of %.1f MB", mem.StateGiB, w.Config().MaxSeqs, perSeq/1e6)
	}
	if w.Config().MaxSeqs >= 1024 || mem.StateGiB*gib > w.cacheBytes(w.fixedBytes())/2+1 || mem.KVCacheGiB <= 0 {
		t.Fatalf("sequence cap %d (backend 1024), state %.1f GiB of %.1f GiB cache memory", w.Config().MaxSeqs, mem.StateGiB, w.cacheBytes(w.fixedBytes())/gib)
	}
	if want := float64(m.FullAttentionLayers()) * 2 * 1 * 256 * 2; mem.KVBytesPerToken != want {
		// 15 full layers, K and V of one head per rank (2 KV heads
		// replicated over tp 4), bf16.
		t.Errorf("KV bytes per token per GPU %g, want %g", mem.KVBytesPerToken, want)
	}

	// The same model with every layer full attention and no state.
	full := *m
	full.Linear = nil
	fw, err := NewWorker(Config{Model: &full, Device: d, Backend: SGLang, Weights: catalog.FP8, TP: 4}, MustDefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if fw.Memory().StateGiB != 0 || fw.Config().MaxSeqs != 1024 {
		t.Fatalf("without linear layers: state %.1f GiB, cap %d", fw.Memory().StateGiB, fw.Config().MaxSeqs)
	}
	// One more sequence at short context costs its state traffic; at long
	// context the full model reads four times the KV per token.
	perSeqHybrid := decodeStep(w, 9, 100) - decodeStep(w, 8, 100)
	stateTraffic := 2 * w.linState / w.attnBW
	if perSeqHybrid < stateTraffic || stateTraffic <= 0 {
		t.Errorf("a decode sequence adds %.1f us, less than its state traffic %.1f us", perSeqHybrid*1e6, stateTraffic*1e6)
	}
	if w.DecodeCtxCost()*4 != fw.DecodeCtxCost() {
		t.Errorf("decode context cost %.3g s/token, all-full %.3g: want a quarter", w.DecodeCtxCost(), fw.DecodeCtxCost())
	}
	if prefillStep(w, 4096) <= prefillStep(w, 2048) {
		t.Error("prefill time must grow with the prompt")
	}
}
