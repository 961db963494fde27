package kernels

import "github.com/gpuplane/gpuplane/internal/perf"

// BorrowedTime answers a sample measured on one GPU from another GPU's
// set through k, the performance model's view of that set (scaled or
// not): the operations the model prices from tables (GEMM, context and
// generation attention, generation MLA). ok is false for other kinds.
func BorrowedTime(k perf.Kernels, smp Sample) (ms float64, ok bool) {
	x := smp.Key
	var secs float64
	switch smp.Op {
	case OpGEMM:
		secs, ok = k.GEMM(smp.Dtype, x[0], x[1], x[2])
	case OpContextAttention:
		secs, ok = k.ContextAttention(smp.Attn.AttnDtype, smp.Attn.KVDtype, smp.Attn.HeadDim, smp.Attn.Window, x[0], x[1], x[2], x[3])
	case OpGenerationAttention:
		secs, ok = k.GenerationAttention(smp.Attn.KVDtype, smp.Attn.HeadDim, smp.Attn.Window, x[0], x[1], x[2], x[3])
	case OpGenerationMLA:
		secs, ok = k.GenerationMLA(smp.Attn.KVDtype, x[0], x[1], x[2])
	}
	return secs * 1e3, ok
}

// Tables is the performance model's view of a set (milliseconds to
// seconds), as --kernels serves it.
func Tables(s *Set) perf.Kernels { return seconds{s} }
