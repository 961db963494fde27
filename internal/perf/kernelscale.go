package perf

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// kernelFixedSecs is the part of a measured kernel time that a device's
// SMs do not change: launch and set-up. The smallest GEMM in the tables
// takes 1.6-2.5 us on every measured system.
const kernelFixedSecs = 2e-6

// streamingCeiling is the most of the spec sheet's memory bandwidth the
// tables' streaming kernels reach: GEMMs of up to 64 rows and decode
// attention top out at 0.87-0.96 of it on every HBM system.
const streamingCeiling = 0.9

// scaledKernels prices operations on a device from the tables of another
// GPU of its architecture (a slice's whole GPU, or the nearest measured
// GPU). The tables show kernels limited by their SMs far more often than
// by memory: an H200 (the H100's SMs, 1.43x its bandwidth) times decode
// attention within 3% of the H100. So a measured time keeps its fixed part
// and scales the rest by the ratio of the SMs' throughput, and is held no
// faster than streaming its bytes at the ceiling of the device's bandwidth.
// A time the source could only reach at its own bandwidth ceiling was
// memory-bound there, and follows the bandwidth alone. The SMs' throughput
// is the bf16 tensor peak (SMs x clock) whatever the operation's precision:
// the B300's fp4 peak is 1.55x the B200's, and its fp4 GEMM tables are not.
type scaledKernels struct {
	k    Kernels
	from catalog.Device
	// sm is the source's SM throughput over the device's; streamFrom and
	// streamTo are their bandwidth ceilings in bytes/s. All are set once
	// (newScaledKernels); ok is false where a rate is not positive.
	sm, streamFrom, streamTo float64
	ok                       bool
}

func newScaledKernels(k Kernels, from, to catalog.Device) scaledKernels {
	pf, pt := from.PeakTFLOPS(catalog.BF16), to.PeakTFLOPS(catalog.BF16)
	bf, bt := from.BandwidthGBps()*1e9*streamingCeiling, to.BandwidthGBps()*1e9*streamingCeiling
	return scaledKernels{k: k, from: from, sm: pf / pt, streamFrom: bf, streamTo: bt,
		ok: pf > 0 && pt > 0 && bf > 0 && bt > 0}
}

// scale is a measured time of an operation moving bytes, on the device.
func (s scaledKernels) scale(secs float64, ok bool, bytes float64) (float64, bool) {
	if !ok || !s.ok {
		return 0, false
	}
	switch {
	case secs <= kernelFixedSecs:
		return secs, true
	case secs <= bytes/s.streamFrom:
		return math.Max(secs*s.streamFrom/s.streamTo, kernelFixedSecs), true
	}
	return math.Max(kernelFixedSecs+(secs-kernelFixedSecs)*s.sm, bytes/s.streamTo), true
}

// tablePrecision is the weight precision whose GEMMs a table's dtype
// name times: gemmDtype read backwards.
func tablePrecision(dtype string) catalog.Precision {
	for _, p := range []catalog.Precision{catalog.FP8, catalog.FP4, catalog.INT8, catalog.W4A16} {
		if gemmDtype(p) == dtype {
			return p
		}
	}
	return catalog.BF16
}

func (s scaledKernels) GEMM(dtype string, m, n, k float64) (float64, bool) {
	p := tablePrecision(dtype)
	act := p.Bytes()
	if p.WeightOnly() {
		act = catalog.BF16.Bytes()
	}
	t, ok := s.k.GEMM(dtype, m, n, k)
	return s.scale(t, ok, p.Bytes()*n*k+act*m*k+2*m*n)
}

func (s scaledKernels) ContextAttention(attnDtype, kvDtype string, headDim, window int, heads, kvHeads, isl, batch float64) (float64, bool) {
	p := catalog.BF16
	if attnDtype == "fp8" {
		p = catalog.FP8
	}
	t, ok := s.k.ContextAttention(attnDtype, kvDtype, headDim, window, heads, kvHeads, isl, batch)
	return s.scale(t, ok, batch*isl*float64(headDim)*(2*heads+2*kvHeads)*p.Bytes())
}

func (s scaledKernels) GenerationAttention(kvDtype string, headDim, window int, heads, kvHeads, batch, kvLen float64) (float64, bool) {
	ctx := kvLen
	if window > 0 {
		ctx = math.Min(ctx, float64(window))
	}
	t, ok := s.k.GenerationAttention(kvDtype, headDim, window, heads, kvHeads, batch, kvLen)
	return s.scale(t, ok, batch*ctx*2*kvHeads*float64(headDim)*cacheBytes(kvDtype))
}

func (s scaledKernels) GenerationMLA(kvDtype string, heads, batch, kvLen float64) (float64, bool) {
	const latent = tableMLALatent + tableMLARope
	t, ok := s.k.GenerationMLA(kvDtype, heads, batch, kvLen)
	return s.scale(t, ok, batch*kvLen*latent*cacheBytes(kvDtype))
}

// AllReduce does not carry over: another GPU's links (or a slice's lack
// of them) are not what the table measured, so the roofline prices it.
func (s scaledKernels) AllReduce(float64, float64) (float64, bool) { return 0, false }

// MoE summaries are fractions of peak and bandwidth, which the worker
// applies to its own device.
func (s scaledKernels) MoE(w catalog.Precision) (*MoEKernel, error) { return s.k.MoE(w) }

func cacheBytes(kvDtype string) float64 {
	if kvDtype == "fp8" {
		return 1
	}
	return 2
}

// tablesFor finds the kernel tables that price device d under backend b:
// its GPU's own, or those of another measured GPU of its architecture and
// compute capability, scaled to d's peak and bandwidth (a slice's whole
// GPU is scaled to the slice's share). note says what was borrowed, or
// why a GPU the tables do not cover keeps the embedded summaries.
func (p *Params) tablesFor(d catalog.Device, b Backend) (k Kernels, note string, err error) {
	if p.Kernels == nil {
		return nil, "", nil
	}
	k, on, err := p.Kernels(d.GPU, b)
	if err != nil {
		return nil, "", err
	}
	if k == nil {
		return nil, fmt.Sprintf("no %s kernel tables of %s or of a measured GPU of its architecture and compute capability %s: the embedded summaries price it",
			b, d.GPU.Name, d.GPU.ComputeCapability), nil
	}
	whole := d.ComputeFraction == 1 && d.BandwidthFraction == 1
	if on == nil || on.Name == d.GPU.Name {
		if whole {
			return k, "", nil
		}
		return newScaledKernels(k, catalog.WholeDevice(d.GPU), d), "", nil
	}
	if !SameKernels(on, d.GPU) {
		// A source that offers another architecture's tables is wrong, not
		// approximately right: its kernels are other kernels.
		return nil, "", fmt.Errorf("tables of %s (%s, compute capability %s) offered for %s (%s, %s)",
			on.Name, on.Architecture, on.ComputeCapability, d.GPU.Name, d.GPU.Architecture, d.GPU.ComputeCapability)
	}
	note = fmt.Sprintf("%s has no %s kernel tables: %s's measured ones price it, scaled to its tensor peak and memory bandwidth", d.GPU.Name, b, on.Name)
	return newScaledKernels(k, catalog.WholeDevice(on), d), note, nil
}

// measuredOn names the GPU whose tables k holds, priced for device d.
func measuredOn(k Kernels, d catalog.Device) string {
	if s, ok := k.(scaledKernels); ok {
		return s.from.GPU.Name
	}
	return d.GPU.Name
}

// ScaledKernels prices operations on device to from tables measured on
// from, as the model does for a slice or a GPU without tables; all-reduces
// are left unanswered.
func ScaledKernels(k Kernels, from, to catalog.Device) Kernels {
	return newScaledKernels(k, from, to)
}
