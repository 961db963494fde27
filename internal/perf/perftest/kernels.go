// Package perftest holds fakes for the performance model's interfaces and
// a helper that builds a catalog worker for tests.
package perftest

import (
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Kernels is a fake perf.Kernels with closed-form operation times, so a
// test knows exactly what the model should add up. Calls counts lookups.
type Kernels struct {
	// GEMMSecs per m*n*k; CtxSecs per batch*isl^2; GenGamma, GenAlpha and
	// GenBeta make decode attention gamma + alpha*b + beta*b*s; ARSecs per
	// element. A zero rate answers "not measured".
	GEMMSecs, CtxSecs, GenGamma, GenAlpha, GenBeta, ARSecs float64
	// MoEKernel answers every precision's MoE summary (nil: none).
	MoEKernel *perf.MoEKernel
	Calls     int
}

func (k *Kernels) MoE(catalog.Precision) (*perf.MoEKernel, error) { return k.MoEKernel, nil }

func (k *Kernels) GEMM(_ string, m, n, kk float64) (float64, bool) {
	k.Calls++
	return k.GEMMSecs * m * n * kk, k.GEMMSecs > 0
}

func (k *Kernels) ContextAttention(_, _ string, _, _ int, _, _, isl, batch float64) (float64, bool) {
	k.Calls++
	return k.CtxSecs * batch * isl * isl, k.CtxSecs > 0
}

func (k *Kernels) GenerationAttention(_ string, _, _ int, _, _, batch, kvLen float64) (float64, bool) {
	k.Calls++
	return k.GenGamma + k.GenAlpha*batch + k.GenBeta*batch*kvLen, k.GenBeta > 0
}

// GenerationMLA answers like GenerationAttention.
func (k *Kernels) GenerationMLA(_ string, _, batch, kvLen float64) (float64, bool) {
	k.Calls++
	return k.GenGamma + k.GenAlpha*batch + k.GenBeta*batch*kvLen, k.GenBeta > 0
}

func (k *Kernels) AllReduce(_, elems float64) (float64, bool) {
	k.Calls++
	return k.ARSecs * elems, k.ARSecs > 0
}
