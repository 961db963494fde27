package perf

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

const gib = float64(1 << 30)

// Memory is the per-GPU memory plan of a worker.
type Memory struct {
	DeviceGiB     float64 `json:"device_gib"`
	WeightsGiB    float64 `json:"weights_gib"`
	ActivationGiB float64 `json:"activation_gib"`
	ReserveGiB    float64 `json:"reserve_gib"`
	KVCacheGiB    float64 `json:"kv_cache_gib"`
	// StateGiB is the recurrent state reserved for the sequence cap
	// (linear-attention layers); it comes out of the cache memory.
	StateGiB float64 `json:"state_gib,omitempty"`
	// KVBytesPerToken is per GPU: its share of the heads and layers.
	KVBytesPerToken float64 `json:"kv_bytes_per_token"`
	// KVTokens is how many tokens of context the worker can hold.
	KVTokens int `json:"kv_cache_tokens"`
}

// WeightsBytesPerGPU is the weight memory of one rank. Embedding and output
// head are vocabulary-parallel and stay in bf16 in quantised checkpoints.
func (w *Worker) WeightsBytesPerGPU() float64 {
	m := w.cfg.Model
	layers := float64(m.Layers) / w.pp
	perLayer := w.denseParams
	if m.MoE != nil {
		perLayer += w.moeLayerFrac * (w.routedExperts*w.expertParams + w.hidden*w.routedExperts/w.tp)
	}
	emb := m.EmbeddingParams() / w.tp / w.pp
	if w.cfg.SpecTokens > 0 {
		// The draft (an MTP module, an EAGLE head) is about one more layer,
		// held whole by the stage that runs it.
		layers++
	}
	return layers*perLayer*w.wBytes + emb*catalog.BF16.Bytes()
}

// ActivationBytes is the peak activation memory of the largest iteration.
func (w *Worker) ActivationBytes() float64 {
	m := w.cfg.Model
	inter := float64(m.IntermediateSize)
	if m.MoE != nil {
		inter = math.Max(inter, float64(m.MoE.IntermediateSize*m.MoE.ExpertsPerToken))
	}
	tok := float64(w.cfg.MaxBatchedTokens)
	act := tok * (4*w.hidden + 2*inter/w.tp) * 2
	logits := float64(w.cfg.MaxSeqs) * float64(m.VocabSize) / w.tp * 4
	return act + logits
}

// Memory plans the worker's memory and its KV-cache capacity.
func (w *Worker) Memory() Memory {
	dev := w.cfg.Device.MemoryGiB * gib
	weights, act, reserve := w.fixedBytes()
	state := w.linState * float64(w.cfg.MaxSeqs)
	kv := w.cacheBytes(weights, act, reserve) - state
	attnLayers := float64(w.cfg.Model.FullAttentionLayers()) / w.pp
	if w.cfg.SpecTokens > 0 {
		attnLayers++ // the draft layer caches its own keys and values
	}
	perTok := attnLayers*w.kvElemsGPU*w.cfg.KV.Bytes() + w.idxBytesTok
	tokens := 0
	if kv > 0 {
		tokens = int(kv / perTok)
	}
	return Memory{DeviceGiB: dev / gib, WeightsGiB: weights / gib, ActivationGiB: act / gib, ReserveGiB: reserve / gib,
		KVCacheGiB: math.Max(kv, 0) / gib, StateGiB: state / gib, KVBytesPerToken: perTok, KVTokens: tokens}
}

// fixedBytes is what a GPU holds before any cache: weights, the largest
// iteration's activations and the runtime reserve.
func (w *Worker) fixedBytes() (weights, act, reserve float64) {
	return w.WeightsBytesPerGPU(), w.ActivationBytes(), w.be.ReserveGiBFor(w.cfg.Device.MemoryGiB) * gib
}

// cacheBytes is the engine's memory for KV cache and sequence state per GPU
// once the fixed bytes are held.
func (w *Worker) cacheBytes(weights, act, reserve float64) float64 {
	dev := w.cfg.Device.MemoryGiB * gib
	fixed := weights + act + reserve
	if w.be.MemoryOfFree {
		return (dev - fixed) * w.cfg.MemoryUtilization
	}
	return dev*w.cfg.MemoryUtilization - fixed
}

// FitError says a model does not fit and what would.
type FitError struct {
	Model, Device  string
	TP, PP         int
	NeedGB, HaveGB float64
	Suggestion     string
}

func (e *FitError) Error() string {
	short := fmt.Sprintf("%.1f GB", e.NeedGB-e.HaveGB)
	if e.NeedGB-e.HaveGB < 0.1 {
		short = fmt.Sprintf("%.0f MB", math.Max(1, (e.NeedGB-e.HaveGB)*1000)) // too little to show in GB
	}
	s := fmt.Sprintf("model %s does not fit on %s at tp=%d pp=%d: needs %.2f GB per GPU (weights, activations, runtime reserve and the KV cache of one request), has %.2f GB usable; short by %s",
		e.Model, e.Device, e.TP, e.PP, e.NeedGB, e.HaveGB, short)
	if e.Suggestion != "" {
		s += "; " + e.Suggestion
	}
	return s
}

// CheckFit returns a *FitError if one request of seqTokens cannot be held.
func (w *Worker) CheckFit(seqTokens int) error {
	mem := w.Memory()
	if mem.KVTokens >= seqTokens {
		return nil
	}
	need, have := w.fitBytes(mem, seqTokens)
	return &FitError{Model: w.cfg.Model.Name, Device: w.cfg.Device.Name(), TP: w.cfg.TP, PP: w.cfg.PP,
		NeedGB: need / 1e9, HaveGB: have / 1e9}
}

// fitBytes is what one request needs and what the engine's share of the device offers.
func (w *Worker) fitBytes(mem Memory, seqTokens int) (need, have float64) {
	fixed := (mem.WeightsGiB + mem.ActivationGiB + mem.ReserveGiB) * gib
	kv := float64(seqTokens)*mem.KVBytesPerToken + mem.StateGiB*gib
	dev := mem.DeviceGiB * gib
	if w.be.MemoryOfFree {
		// TensorRT-LLM only takes a share of what is free for the cache.
		return fixed + kv/w.cfg.MemoryUtilization, dev
	}
	return fixed + kv, dev * w.cfg.MemoryUtilization
}

// SuggestFit finds the smallest TP of the same device, and the smallest
// device (by memory) at the requested TP, that hold one request.
func SuggestFit(cfg Config, p *Params, cat *catalog.Catalog, seqTokens int) string {
	var parts []string
	for tp := cfg.TP * 2; tp <= cfg.Device.GPU.MaxTP() && cfg.Device.Whole(); tp *= 2 {
		c := cfg
		c.TP = tp
		if w, err := NewWorker(c, p); err == nil && w.Memory().KVTokens >= seqTokens {
			parts = append(parts, fmt.Sprintf("smallest fitting tp on %s: --tp %d", cfg.Device.Name(), tp))
			break
		}
	}
	devs := cat.Devices()
	sort.SliceStable(devs, func(i, j int) bool { return devs[i].MemoryGiB < devs[j].MemoryGiB })
	for _, d := range devs {
		if !d.Whole() && d.MemoryGiB > 0.95*d.GPU.MemoryGiB {
			continue // a full-GPU slice is the whole GPU in all but name
		}
		c := cfg
		c.Device = d
		if w, err := NewWorker(c, p); err == nil && w.Memory().KVTokens >= seqTokens {
			parts = append(parts, fmt.Sprintf("smallest fitting device at tp=%d: %s (%.0f GiB)", cfg.TP, d.Name(), d.MemoryGiB))
			break
		}
	}
	if len(parts) == 0 {
		return "no catalog device fits it at this tp; try a lower precision or pipeline parallelism (--pp)"
	}
	return strings.Join(parts, "; ")
}
