package kernels

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// GPU is what a system's system.yaml says of its GPU: the roofline that
// scales a measurement to a shape outside the measured grid.
type GPU struct {
	MemBW     float64 `json:"mem_bw"`            // bytes/s
	BF16FLOPS float64 `json:"bfloat16_tc_flops"` // dense FLOP/s
	FP8FLOPS  float64 `json:"fp8_tc_flops"`
	INT8FLOPS float64 `json:"int8_tc_flops"`
	FP4FLOPS  float64 `json:"fp4_tc_flops"`
}

type systemFile struct {
	GPU GPU `json:"gpu"`
}

func readGPU(dir, system string) (GPU, error) {
	b, err := os.ReadFile(filepath.Join(dir, system, "system.yaml"))
	if err != nil {
		return GPU{}, fmt.Errorf("kernels: %w", err)
	}
	var f systemFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return GPU{}, fmt.Errorf("kernels: %s/system.yaml: %w", system, err)
	}
	if f.GPU.MemBW <= 0 || f.GPU.BF16FLOPS <= 0 {
		return GPU{}, fmt.Errorf("kernels: %s/system.yaml: gpu.mem_bw and gpu.bfloat16_tc_flops must be positive", system)
	}
	return f.GPU, nil
}

// Peak is the dense tensor-core FLOP/s for a GEMM dtype.
func (g GPU) Peak(dtype string) float64 {
	switch dtype {
	case "fp8", "fp8_block", "fp8_static":
		if g.FP8FLOPS > 0 {
			return g.FP8FLOPS
		}
	case "sq":
		if g.INT8FLOPS > 0 {
			return g.INT8FLOPS
		}
	case "nvfp4":
		if g.FP4FLOPS > 0 {
			return g.FP4FLOPS
		}
	}
	return g.BF16FLOPS
}

// weightBytes is the bytes per weight element of a GEMM dtype.
func weightBytes(dtype string) float64 {
	switch dtype {
	case "fp8", "fp8_block", "fp8_static", "sq", "int8_wo":
		return 1
	case "int4_wo", "nvfp4":
		return 0.5
	}
	return 2
}

// kvBytes is the bytes per KV-cache element.
func kvBytes(dtype string) float64 {
	if dtype == "fp8" || dtype == "fp8_e4m3" {
		return 1
	}
	return 2
}

// roof is the roofline time of an operation in seconds: the larger of its
// FLOPs at peak and its bytes at full bandwidth.
func (g GPU) roof(flops, peak, bytes float64) float64 {
	return max(flops/peak, bytes/g.MemBW)
}

// GEMMRoofline is the roofline time (ms) of an m x k by k x n GEMM.
func (g GPU) GEMMRoofline(dtype string, m, n, k float64) float64 {
	return 1e3 * g.roof(2*m*n*k, g.Peak(dtype), (n*k)*weightBytes(dtype)+(m*k+m*n)*2)
}

// ContextAttentionRoofline is the roofline time (ms) of causal prefill
// attention over batch prompts of isl tokens.
func (g GPU) ContextAttentionRoofline(k AttnKey, heads, kvHeads, isl, batch float64) float64 {
	pairs := isl * isl / 2
	if k.Window > 0 && float64(k.Window) < isl {
		pairs = isl * float64(k.Window)
	}
	flops := 4 * batch * heads * pairs * float64(k.HeadDim)
	peak := g.BF16FLOPS
	if k.AttnDtype == "fp8" && g.FP8FLOPS > 0 {
		peak = g.FP8FLOPS
	}
	bytes := batch * isl * float64(k.HeadDim) * (2*heads + 2*kvHeads*kvBytes(k.KVDtype))
	return 1e3 * g.roof(flops, peak, bytes)
}

// GenerationAttentionRoofline is the roofline time (ms) of one decode step
// of batch sequences over kvLen cached tokens.
func (g GPU) GenerationAttentionRoofline(k AttnKey, heads, kvHeads, batch, kvLen float64) float64 {
	s := kvLen
	if k.Window > 0 && float64(k.Window) < s {
		s = float64(k.Window)
	}
	flops := 4 * batch * heads * s * float64(k.HeadDim)
	bytes := batch * 2 * kvHeads * s * float64(k.HeadDim) * kvBytes(k.KVDtype)
	return 1e3 * g.roof(flops, g.BF16FLOPS, bytes)
}

// scaled returns v measured at `at` moved to key by the ratio of the
// roofline costs: beyond the largest measured shape the kernel keeps the
// efficiency it had at the edge. Below the smallest it keeps the edge's
// time: small kernels are bound by launch and latency, not by the
// roofline, so scaling them down would be optimistic.
func scaled(v float64, key, at []float64, cost func([]float64) float64) float64 {
	target := make([]float64, len(key))
	same := true
	for i := range key {
		target[i] = max(key[i], at[i])
		same = same && target[i] == at[i]
	}
	if same {
		return v
	}
	c0, c1 := cost(at), cost(target)
	if c0 <= 0 || c1 <= 0 {
		return v
	}
	return v * c1 / c0
}

// answer looks key up in g and scales it from where it was measured.
func answer(g *Grid, key []float64, cost func([]float64) float64) (float64, bool) {
	if g == nil || g.Rows() == 0 {
		return 0, false
	}
	v, at, ok := g.Lookup(key)
	if !ok {
		return 0, false
	}
	return scaled(v, key, at, cost), true
}

// GEMMTime is the time (ms) of a GEMM, or false when the dtype has no table.
func (s *Set) GEMMTime(dtype string, m, n, k float64) (float64, bool) {
	return answer(s.GEMM[dtype], []float64{m, n, k}, func(x []float64) float64 {
		return s.GPU.GEMMRoofline(dtype, x[0], x[1], x[2])
	})
}

// ContextAttentionTime is the time (ms) of one prefill attention call.
func (s *Set) ContextAttentionTime(k AttnKey, heads, kvHeads, isl, batch float64) (float64, bool) {
	return answer(s.ContextAttention[k], []float64{heads, kvHeads, isl, batch}, func(x []float64) float64 {
		return s.GPU.ContextAttentionRoofline(k, x[0], x[1], x[2], x[3])
	})
}

// GenerationAttentionTime is the time (ms) of one decode attention call.
func (s *Set) GenerationAttentionTime(k AttnKey, heads, kvHeads, batch, kvLen float64) (float64, bool) {
	k.AttnDtype = ""
	return answer(s.GenerationAttention[k], []float64{heads, kvHeads, batch, kvLen}, func(x []float64) float64 {
		return s.GPU.GenerationAttentionRoofline(k, x[0], x[1], x[2], x[3])
	})
}

// AllReduceTime is the time (ms) of an all-reduce of elems 16-bit values
// per rank over gpus ranks.
func (s *Set) AllReduceTime(gpus, elems float64) (float64, bool) {
	// Ring traffic 2(g-1)/g of the buffer, plus a fixed latency that a
	// 64 Ki-element message roughly equals on NVLink.
	return answer(s.AllReduce, []float64{gpus, elems}, func(x []float64) float64 { return 2*(x[0]-1)/x[0]*x[1] + 65536 })
}

// plausibleMargin allows a kernel to beat the spec sheet's peak by this
// factor (boost clocks); faster than that, the row is not a real run.
const plausibleMargin = 1.25

// plausible says whether a measurement is no faster than the GPU's
// roofline allows.
func (s *Set) plausible(smp Sample) bool {
	k := smp.Key
	var roof float64
	switch smp.Op {
	case OpGEMM:
		roof = s.GPU.GEMMRoofline(smp.Dtype, k[0], k[1], k[2])
	case OpContextAttention:
		kv := k[1]
		if kv == 0 {
			kv = k[0]
		}
		roof = s.GPU.ContextAttentionRoofline(smp.Attn, k[0], kv, k[2], k[3])
	case OpGenerationAttention:
		kv := k[1]
		if kv == 0 {
			kv = k[0]
		}
		roof = s.GPU.GenerationAttentionRoofline(smp.Attn, k[0], kv, k[2], k[3])
	case OpContextMLA:
		roof = s.GPU.ContextMLARoofline(smp.Attn, k[0], k[1], k[2])
	case OpGenerationMLA:
		roof = s.GPU.GenerationMLARoofline(smp.Attn, k[0], k[1], k[2])
	default:
		return true
	}
	return smp.Latency*plausibleMargin >= roof
}
