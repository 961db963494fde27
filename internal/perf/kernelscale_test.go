package perf

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// constKernels answers every lookup but the all-reduce with one time.
type constKernels struct{ secs float64 }

func (c constKernels) GEMM(string, float64, float64, float64) (float64, bool) { return c.secs, true }
func (c constKernels) ContextAttention(string, string, int, int, float64, float64, float64, float64) (float64, bool) {
	return c.secs, true
}
func (c constKernels) GenerationAttention(string, int, int, float64, float64, float64, float64) (float64, bool) {
	return c.secs, true
}
func (c constKernels) GenerationMLA(string, float64, float64, float64) (float64, bool) {
	return c.secs, true
}
func (c constKernels) AllReduce(float64, float64) (float64, bool) { return c.secs, true }
func (c constKernels) MoE(catalog.Precision) (*MoEKernel, error)  { return nil, nil }

func device(t *testing.T, gpu, slice string) catalog.Device {
	t.Helper()
	d, err := catalog.MustDefault().Device(gpu, slice)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A measured time keeps its fixed part and scales the rest by the SMs'
// throughput, held no faster than streaming its bytes at the device's
// bandwidth ceiling; a time at the source's own ceiling follows bandwidth.
func TestScaledKernelsFollowSMsAndBandwidth(t *testing.T) {
	whole := device(t, "h100_sxm", "")
	h200 := device(t, "h200_sxm", "")
	mig := device(t, "h100_sxm", "3g.40gb")
	nvl := device(t, "h100_nvl", "")
	fp8Bytes := catalog.FP8.Bytes()
	// A one-row fp8 GEMM of 8192 x 8192 streams its weights: 22 us at the
	// H100's ceiling.
	decodeGEMM := func(s scaledKernels) (float64, bool) { return s.GEMM("fp8", 1, 8192, 8192) }
	decodeBytes := fp8Bytes*8192*8192 + fp8Bytes*8192 + 2*8192
	for _, tc := range []struct {
		name     string
		secs     float64
		from, to catalog.Device
		op       func(s scaledKernels) (float64, bool)
		want     float64
	}{
		{"prefill GEMM on a slice", 1e-3, whole, mig, func(s scaledKernels) (float64, bool) { return s.GEMM("bfloat16", 8192, 8192, 8192) },
			kernelFixedSecs + (1e-3-kernelFixedSecs)/mig.ComputeFraction},
		{"decode attention on a slice, limited by SMs", 1e-3, whole, mig, func(s scaledKernels) (float64, bool) {
			return s.GenerationAttention("fp8", 128, 0, 64, 8, 64, 8192)
		}, kernelFixedSecs + (1e-3-kernelFixedSecs)/mig.ComputeFraction},
		{"fp8 GEMM on a slower-clocked Hopper", 1e-3, whole, nvl, decodeGEMM,
			kernelFixedSecs + (1e-3-kernelFixedSecs)*whole.PeakTFLOPS(catalog.BF16)/nvl.PeakTFLOPS(catalog.BF16)},
		{"fp4 GEMM on a B300: its SMs, not its fp4 peak", 1e-3, device(t, "b200_sxm", ""), device(t, "b300_sxm", ""),
			func(s scaledKernels) (float64, bool) { return s.GEMM("nvfp4", 8192, 8192, 8192) }, 1e-3},
		{"a GEMM at the source's bandwidth ceiling", 20e-6, whole, nvl, decodeGEMM, 20e-6 * whole.BandwidthGBps() / nvl.BandwidthGBps()},
		{"more bandwidth does not speed an SM-limited kernel", 1e-3, whole, h200, decodeGEMM, 1e-3},
		{"less bandwidth holds a kernel to its ceiling", 18e-6, h200, whole, decodeGEMM, decodeBytes / (streamingCeiling * whole.BandwidthGBps() * 1e9)},
		{"launch-bound", 1e-6, whole, mig, func(s scaledKernels) (float64, bool) { return s.GEMM("bfloat16", 8192, 8192, 8192) }, 1e-6},
		{"MLA decode on a slice", 1e-3, whole, mig, func(s scaledKernels) (float64, bool) { return s.GenerationMLA("fp8", 16, 64, 4096) },
			kernelFixedSecs + (1e-3-kernelFixedSecs)/mig.ComputeFraction},
		{"prefill attention on a slower-clocked Hopper", 1e-3, whole, nvl, func(s scaledKernels) (float64, bool) {
			return s.ContextAttention("bfloat16", "bfloat16", 128, 0, 64, 8, 4096, 4)
		}, kernelFixedSecs + (1e-3-kernelFixedSecs)*whole.PeakTFLOPS(catalog.BF16)/nvl.PeakTFLOPS(catalog.BF16)},
	} {
		s := newScaledKernels(constKernels{tc.secs}, tc.from, tc.to)
		got, ok := tc.op(s)
		if !ok {
			t.Fatalf("%s: not answered", tc.name)
		}
		if math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("%s: %.6g s, want %.6g", tc.name, got, tc.want)
		}
	}
	s := newScaledKernels(constKernels{1e-3}, whole, mig)
	if _, ok := s.AllReduce(2, 1e6); ok {
		t.Error("a scaled table answered an all-reduce: another GPU's links are not this device's")
	}
}

// The worker takes its device's tables directly, a slice's whole GPU's
// scaled, and another GPU's of its architecture scaled with a note; a
// source that offers another architecture's tables is an error.
func TestTablesFor(t *testing.T) {
	k := constKernels{1e-3}
	source := func(on string) KernelSource {
		return func(*catalog.GPU, Backend) (Kernels, *catalog.GPU, error) {
			switch on {
			case "":
				return k, nil, nil
			case "none":
				return nil, nil, nil
			}
			g, err := catalog.MustDefault().GPU(on)
			return k, g, err
		}
	}
	for _, tc := range []struct {
		dev          catalog.Device
		on           string
		scaled       bool
		note, errMsg string
	}{
		{device(t, "h100_sxm", ""), "", false, "", ""},
		{device(t, "h100_sxm", ""), "h100_sxm", false, "", ""},
		{device(t, "h100_sxm", "1g.10gb"), "", true, "", ""},
		{device(t, "h100_nvl", ""), "h100_sxm", true, "h100_nvl has no vllm kernel tables: h100_sxm's measured ones price it", ""},
		{device(t, "l4", ""), "h100_sxm", false, "", "tables of h100_sxm (hopper, compute capability 9.0) offered for l4"},
		{device(t, "rtx_pro_6000", ""), "none", false, "no vllm kernel tables of rtx_pro_6000 or of a measured GPU of its architecture and compute capability 12.0", ""},
	} {
		p := MustDefaultParams()
		p.Kernels = source(tc.on)
		got, note, err := p.tablesFor(tc.dev, VLLM)
		if tc.errMsg != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errMsg) {
				t.Errorf("%s from %s: error %v, want %q", tc.dev.Name(), tc.on, err, tc.errMsg)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.dev.Name(), err)
		}
		if (got == nil) != (tc.on == "none") {
			t.Errorf("%s from %q: tables %v", tc.dev.Name(), tc.on, got)
		}
		if _, isScaled := got.(scaledKernels); isScaled != tc.scaled {
			t.Errorf("%s from %q: scaled %v, want %v", tc.dev.Name(), tc.on, isScaled, tc.scaled)
		}
		if want := map[bool]string{true: tc.on, false: tc.dev.GPU.Name}[tc.on != "" && tc.on != "none"]; got != nil && measuredOn(got, tc.dev) != want {
			t.Errorf("%s from %q: tables named as %s's, want %s's", tc.dev.Name(), tc.on, measuredOn(got, tc.dev), want)
		}
		if !strings.Contains(note, tc.note) || (tc.note == "") != (note == "") {
			t.Errorf("%s from %q: note %q, want %q", tc.dev.Name(), tc.on, note, tc.note)
		}
	}
}
