package catalog

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Slice kinds.
const (
	SliceMIG  = "mig"
	SliceVGPU = "vgpu"
)

// MIGProfile is one MIG instance profile of a GPU.
type MIGProfile struct {
	GPU            string  `json:"gpu"`
	Profile        string  `json:"profile"`
	MemoryFraction float64 `json:"memoryFraction"`
	SMs            int     `json:"sms"`
	MemoryGiB      float64 `json:"memoryGiB"`
	MaxInstances   int     `json:"maxInstances"`
	Derived        bool    `json:"derived,omitempty"`
}

// VGPUSize is a time-sliced or hypervisor-partitioned share of a GPU.
type VGPUSize struct {
	GPU       string   `json:"gpu"`
	Fraction  string   `json:"fraction"`
	MemoryGiB float64  `json:"memoryGiB"`
	Profile   string   `json:"profile,omitempty"`
	Instances []string `json:"instances,omitempty"`
	Cloud     string   `json:"cloud,omitempty"`
}

// Device is what one serving worker's GPU rank runs on: a whole GPU or a
// slice of one. The fractions scale the GPU's peaks in the performance model.
type Device struct {
	GPU *GPU
	// Kind is "gpu", "mig" or "vgpu".
	Kind string
	// Slice is the MIG profile or vGPU fraction ("3g.40gb", "1/2"); empty for a whole GPU.
	Slice string
	// ComputeFraction scales tensor throughput; BandwidthFraction scales memory bandwidth.
	ComputeFraction   float64
	BandwidthFraction float64
	MemoryGiB         float64
	VGPUProfile       string
}

// Name is the canonical device name, e.g. "h100_sxm", "h100_sxm:3g.40gb", "a10:1/2".
func (d Device) Name() string {
	if d.Slice == "" {
		return d.GPU.Name
	}
	return d.GPU.Name + ":" + d.Slice
}

// Whole reports whether the device is an entire GPU.
func (d Device) Whole() bool { return d.Kind == "gpu" }

// PeakTFLOPS is the dense throughput of the device at the compute precision for p.
func (d Device) PeakTFLOPS(p Precision) float64 { return d.GPU.PeakTFLOPS(p) * d.ComputeFraction }

// BandwidthGBps is the device's share of memory bandwidth.
func (d Device) BandwidthGBps() float64 { return d.GPU.MemoryBandwidthGBps * d.BandwidthFraction }

// WholeDevice wraps a GPU as a device.
func WholeDevice(g *GPU) Device {
	return Device{GPU: g, Kind: "gpu", ComputeFraction: 1, BandwidthFraction: 1, MemoryGiB: g.MemoryGiB}
}

// ParseFraction parses "1/2", "0.5" or "1".
func ParseFraction(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if n, d, ok := strings.Cut(s, "/"); ok {
		num, err1 := strconv.ParseFloat(n, 64)
		den, err2 := strconv.ParseFloat(d, 64)
		if err1 != nil || err2 != nil || !(den > 0 && num > 0 && num <= den) || math.IsInf(den, 1) {
			return 0, fmt.Errorf("fraction %q: want n/d with 0 < n <= d", s)
		}
		return num / den, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("fraction %q: want n/d or a number in (0, 1]", s)
	}
	return f, nil
}

// Device resolves a GPU name and an optional slice ("3g.40gb", "1/2") to a
// device. The slice may also be given inline as "gpu:slice".
func (c *Catalog) Device(gpuName, slice string) (Device, error) {
	if g, s, ok := strings.Cut(gpuName, ":"); ok {
		if slice != "" && slice != s {
			return Device{}, fmt.Errorf("device %q names slice %q but --slice is %q: give it once", gpuName, s, slice)
		}
		gpuName, slice = g, s
	}
	g, err := c.GPU(gpuName)
	if err != nil {
		return Device{}, err
	}
	slice = strings.TrimSpace(slice)
	if slice == "" || slice == "1" || slice == "1/1" {
		return WholeDevice(g), nil
	}
	for _, p := range c.MIG[g.Name] {
		if strings.EqualFold(p.Profile, slice) {
			return Device{GPU: g, Kind: SliceMIG, Slice: p.Profile,
				ComputeFraction:   float64(p.SMs) / float64(g.SMCount),
				BandwidthFraction: p.MemoryFraction,
				MemoryGiB:         p.MemoryGiB}, nil
		}
	}
	if strings.Contains(slice, "/") || !strings.Contains(slice, "g.") {
		f, err := ParseFraction(slice)
		if err != nil {
			return Device{}, fmt.Errorf("device %s: slice: %w", g.Name, err)
		}
		for _, v := range c.VGPU[g.Name] {
			vf, _ := ParseFraction(v.Fraction)
			if abs(vf-f) < 1e-9 {
				return Device{GPU: g, Kind: SliceVGPU, Slice: v.Fraction,
					ComputeFraction: vf, BandwidthFraction: vf, MemoryGiB: v.MemoryGiB, VGPUProfile: v.Profile}, nil
			}
		}
		// A time-sliced share the cloud tables do not list: memory scales with the share.
		return Device{GPU: g, Kind: SliceVGPU, Slice: slice, ComputeFraction: f, BandwidthFraction: f,
			MemoryGiB: g.MemoryGiB * f}, nil
	}
	names := make([]string, 0, len(c.MIG[g.Name]))
	for _, p := range c.MIG[g.Name] {
		names = append(names, p.Profile)
	}
	if len(names) == 0 {
		return Device{}, fmt.Errorf("device %s: slice %q: %s has no MIG profiles; use a fraction such as 1/2 for a time-sliced share", g.Name, slice, g.Name)
	}
	return Device{}, fmt.Errorf("device %s: unknown MIG profile %q; %s", g.Name, slice, closest(slice, names))
}

// Devices lists every whole GPU and every slice the catalog knows.
func (c *Catalog) Devices() []Device {
	var out []Device
	for _, g := range c.GPUs {
		out = append(out, WholeDevice(g))
		for _, p := range c.MIG[g.Name] {
			d, _ := c.Device(g.Name, p.Profile)
			out = append(out, d)
		}
		for _, v := range c.VGPU[g.Name] {
			d, _ := c.Device(g.Name, v.Fraction)
			out = append(out, d)
		}
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
