package catalog

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Architecture families share kernel efficiencies in the performance model.
const (
	Ampere    = "ampere"
	Ada       = "ada"
	Hopper    = "hopper"
	Blackwell = "blackwell"
)

// Architectures lists the architecture families, oldest first.
var Architectures = []string{Ampere, Ada, Hopper, Blackwell}

// GPU holds the facts of one GPU model. Bandwidths are GB/s (1e9 bytes),
// throughput is dense TFLOP/s.
type GPU struct {
	Name                string                `json:"name"`
	Aliases             []string              `json:"aliases,omitempty"`
	ProductName         string                `json:"productName"`
	Architecture        string                `json:"architecture"`
	ComputeCapability   string                `json:"computeCapability"`
	SMCount             int                   `json:"smCount"`
	MemoryGiB           float64               `json:"memoryGiB"`
	MemoryType          string                `json:"memoryType,omitempty"`
	MemoryBandwidthGBps float64               `json:"memoryBandwidthGBps"`
	TFLOPS              map[Precision]float64 `json:"tflops"`
	Int8TOPS            float64               `json:"int8Tops,omitempty"`
	NVLinkGBpsPerDir    float64               `json:"nvlinkGBpsPerDir,omitempty"`
	NVLinkDomainSize    int                   `json:"nvlinkDomainSize,omitempty"`
	PCIeGen             int                   `json:"pcieGen,omitempty"`
	PCIeGBpsPerDir      float64               `json:"pcieGBpsPerDir"`
	TDPWatts            float64               `json:"tdpWatts,omitempty"`
	GPUsPerNode         int                   `json:"gpusPerNode,omitempty"`
	MIG                 *MIGSupport           `json:"mig,omitempty"`
}

// MIGSupport says whether and how a GPU partitions into MIG instances.
type MIGSupport struct {
	ProfileSet   string `json:"profileSet,omitempty"`
	MaxInstances int    `json:"maxInstances"`
	SMsUsable    int    `json:"smsUsable,omitempty"`
}

// ComputePrecision is the tensor-core format GEMMs with weights in p run at.
// GPUs without native support for p run weight-only quantised kernels that
// dequantise to bf16, which is what vLLM, SGLang and TensorRT-LLM do there.
func (g *GPU) ComputePrecision(p Precision) Precision {
	if p.WeightOnly() {
		return BF16
	}
	if p == INT8 {
		return INT8 // every catalog architecture has int8 tensor cores
	}
	if g.TFLOPS[p] > 0 {
		return p
	}
	if p == FP4 && g.TFLOPS[FP8] > 0 {
		return FP8
	}
	return BF16
}

// PeakTFLOPS is the dense tensor throughput at the compute precision for p.
func (g *GPU) PeakTFLOPS(p Precision) float64 {
	cp := g.ComputePrecision(p)
	if cp == INT8 && g.TFLOPS[INT8] == 0 {
		// Dense int8 runs at twice bf16 from Ampere to Blackwell.
		return 2 * g.TFLOPS[BF16]
	}
	return g.TFLOPS[cp]
}

// ScaleUpGBps is the per-direction bandwidth between GPUs of one node (or
// NVLink domain): NVLink where present, PCIe otherwise.
func (g *GPU) ScaleUpGBps() float64 {
	if g.NVLinkGBpsPerDir > 0 {
		return g.NVLinkGBpsPerDir
	}
	return g.PCIeGBpsPerDir
}

// HasNVLink reports whether the GPUs of a node talk over NVLink.
func (g *GPU) HasNVLink() bool { return g.NVLinkGBpsPerDir > 0 }

// MaxTP is the largest tensor-parallel group that fits in one node or NVLink
// domain.
func (g *GPU) MaxTP() int {
	n := g.GPUsPerNode
	if g.NVLinkDomainSize > n {
		n = g.NVLinkDomainSize
	}
	if n < 1 {
		n = 1
	}
	return n
}

// computeCapability is how NVML and CUDA write one: major.minor.
var computeCapability = regexp.MustCompile(`^[1-9][0-9]?\.[0-9]$`)

func (g *GPU) validate() error {
	for _, f := range []struct {
		name      string
		v, lo, hi float64
	}{{"smCount", float64(g.SMCount), 1, 10_000}, {"memoryGiB", g.MemoryGiB, 0.1, 16_384}, {"memoryBandwidthGBps", g.MemoryBandwidthGBps, 1, 1e6},
		{"pcieGBpsPerDir", g.PCIeGBpsPerDir, 0.1, 1e4}, {"nvlinkGBpsPerDir", g.NVLinkGBpsPerDir, 0, 1e5}, {"nvlinkDomainSize", float64(g.NVLinkDomainSize), 0, 1024},
		{"gpusPerNode", float64(g.GPUsPerNode), 0, 1024}, {"tdpWatts", g.TDPWatts, 0, 1e5}, {"int8Tops", g.Int8TOPS, 0, 1e6}} {
		if !(f.v >= f.lo && f.v <= f.hi) { // NaN fails too
			return fmt.Errorf("gpu %q: %s: %g must be in [%g, %g]", g.Name, f.name, f.v, f.lo, f.hi)
		}
	}
	for p, v := range g.TFLOPS {
		if !(v > 0 && v <= 1e6) {
			return fmt.Errorf("gpu %q: tflops.%s: %g must be in (0, 1e6]", g.Name, p, v)
		}
	}
	switch {
	case g.Name == "":
		return fmt.Errorf("gpu: name is empty")
	case g.SMCount <= 0:
		return fmt.Errorf("gpu %q: smCount must be > 0", g.Name)
	case g.MemoryGiB <= 0:
		return fmt.Errorf("gpu %q: memoryGiB must be > 0", g.Name)
	case g.MemoryBandwidthGBps <= 0:
		return fmt.Errorf("gpu %q: memoryBandwidthGBps must be > 0", g.Name)
	case g.TFLOPS[BF16] <= 0:
		return fmt.Errorf("gpu %q: tflops.bf16 must be > 0", g.Name)
	case g.PCIeGBpsPerDir <= 0:
		return fmt.Errorf("gpu %q: pcieGBpsPerDir must be > 0", g.Name)
	}
	if !slices.Contains(Architectures, g.Architecture) {
		return fmt.Errorf("gpu %q: architecture %q is not one of %s", g.Name, g.Architecture, strings.Join(Architectures, ", "))
	}
	for p := range g.TFLOPS {
		if _, err := ParsePrecision(string(p)); err != nil || p != BF16 && p != FP8 && p != FP4 && p != INT8 {
			return fmt.Errorf("gpu %q: tflops key %q: use bf16, fp8, int8 or fp4", g.Name, p)
		}
	}
	// Narrower tensor formats run at least as fast as wider ones on every
	// GPU with tensor cores for them; a peak below the wider one's is a
	// typo (often a missing digit), and would price fp8 slower than bf16.
	for _, pair := range [][2]Precision{{BF16, FP8}, {BF16, INT8}, {FP8, FP4}} {
		wide, narrow := g.TFLOPS[pair[0]], g.TFLOPS[pair[1]]
		if wide > 0 && narrow > 0 && narrow < wide {
			return fmt.Errorf("gpu %q: tflops.%s: %g is below tflops.%s %g; a narrower format's peak is at least the wider one's (dense, without sparsity)", g.Name, pair[1], narrow, pair[0], wide)
		}
	}
	if cc := g.ComputeCapability; cc != "" && !computeCapability.MatchString(cc) {
		return fmt.Errorf("gpu %q: computeCapability: %q; write it major.minor as NVML reports it, e.g. \"9.0\"", g.Name, cc)
	}
	return nil
}
