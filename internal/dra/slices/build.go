// Package slices turns a node's inventory into the devices the DRA driver
// publishes: whole GPUs, static MIG instances, dynamic MIG partitions that
// consume per-GPU counters, vGPU shares and shared GPUs with consumable
// capacity, split into ResourceSlices within the API's limits.
package slices

import (
	"fmt"
	"sort"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

// Features are the driver's opt-in behaviours (Helm values).
type Features struct {
	// DynamicMIG publishes every MIG placement of a MIG-capable GPU that has
	// no static instances as a partitionable device, so the scheduler picks
	// the partition and the plugin creates it at prepare time.
	DynamicMIG bool `json:"dynamicMIG"`
	// SharedGPUs publishes whole GPUs that allow multiple allocations, with
	// consumable memory and compute.
	SharedGPUs bool `json:"sharedGPUs"`
	// VGPU publishes a vGPU guest's device as type vgpu with its profile and
	// fraction; off, it is a plain gpu as NVIDIA's driver publishes it.
	VGPU bool `json:"vgpu"`
	// NVLinkDomains publishes the NVLink domain and clique attributes.
	NVLinkDomains bool `json:"nvlinkDomains"`
}

// UnhealthyTaintKey is the device taint the driver sets on an unhealthy device.
const UnhealthyTaintKey = "gpu.gpuplane.io/unhealthy"

// Allocatable is what the plugin needs to prepare a published device.
type Allocatable struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// GPUUUID is the physical GPU (or the vGPU guest's device).
	GPUUUID  string `json:"gpuUUID"`
	GPUIndex int    `json:"gpuIndex"`
	// MIG partitions: profile, placement, and the instance UUID when it exists already.
	Profile string `json:"profile,omitempty"`
	Start   int    `json:"start,omitempty"`
	MIGUUID string `json:"migUUID,omitempty"`
	// Dynamic partitions are created when prepared.
	Dynamic     bool  `json:"dynamic,omitempty"`
	Shared      bool  `json:"shared,omitempty"`
	MemoryBytes int64 `json:"memoryBytes"`
}

// Result is one node's publication.
type Result struct {
	Slices  []resourceslice.Slice
	Devices map[string]Allocatable
}

// Build lays out n's devices. unhealthy maps a GPU or MIG UUID to the reason
// it is unhealthy; its devices are published with a NoSchedule taint.
func Build(n *inventory.Node, f Features, unhealthy map[string]string) (*Result, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	r := &Result{Devices: map[string]Allocatable{}}
	var devices []resourceapi.Device
	var counters []resourceapi.CounterSet
	add := func(d resourceapi.Device, a Allocatable, uuids ...string) {
		for _, u := range uuids {
			if reason, bad := unhealthy[u]; bad {
				d.Taints = append(d.Taints, resourceapi.DeviceTaint{Key: UnhealthyTaintKey, Value: taintValue(reason),
					Effect: resourceapi.DeviceTaintEffectNoSchedule})
				break
			}
		}
		a.Name = d.Name
		r.Devices[d.Name] = a
		devices = append(devices, d)
	}
	var partitions []partition
	for _, g := range n.GPUs {
		if !f.NVLinkDomains {
			g.NVLink = nil
		}
		base := Allocatable{GPUUUID: g.UUID, GPUIndex: g.Index, MemoryBytes: g.MemoryBytes}
		name := "gpu-" + strconv.Itoa(g.Index)
		switch {
		case g.VGPU != nil && f.VGPU:
			d := vgpuDevice(n, g)
			d.Name = "vgpu-" + strconv.Itoa(g.Index)
			base.Kind = KindVGPU
			add(d, base, g.UUID)
		case g.MIG != nil && g.MIG.Enabled:
			for _, in := range g.MIG.Instances {
				p, _ := g.MIG.Profile(in.Profile)
				d := migDevice(n, g, p, in.Start)
				d.Name = migName(g, p, in.Start)
				d.Attributes["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(in.UUID)}
				a := base
				a.Kind, a.Profile, a.Start, a.MIGUUID, a.MemoryBytes = KindMIG, p.Name, in.Start, in.UUID, p.MemoryBytes
				add(d, a, in.UUID, g.UUID)
			}
		case g.MIG != nil && f.DynamicMIG:
			set := name + "-slices"
			counters = append(counters, counterSet(set, g.MIG))
			d := wholeDevice(n, g)
			d.Name = name
			d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: consumeAll(g.MIG)}}
			a := base
			a.Kind = KindGPU
			add(d, a, g.UUID)
			for _, p := range g.MIG.Profiles {
				for _, s := range p.Placements {
					partitions = append(partitions, partition{g: g, p: p, start: s, set: set})
				}
			}
		case f.SharedGPUs:
			d := sharedDevice(n, g)
			d.Name = name
			a := base
			a.Kind, a.Shared = KindGPU, true
			add(d, a, g.UUID)
		default:
			d := wholeDevice(n, g)
			d.Name = name
			a := base
			a.Kind = KindGPU
			add(d, a, g.UUID)
		}
	}
	// Smallest partitions first: the allocator is first-fit, so small claims
	// do not break up memory a larger profile could have used.
	sort.SliceStable(partitions, func(i, j int) bool {
		pi, pj := partitions[i], partitions[j]
		if pi.p.MemorySlices != pj.p.MemorySlices {
			return pi.p.MemorySlices < pj.p.MemorySlices
		}
		if pi.p.ComputeSlices != pj.p.ComputeSlices {
			return pi.p.ComputeSlices < pj.p.ComputeSlices
		}
		return pi.g.Index < pj.g.Index
	})
	for _, pt := range partitions {
		d := migDevice(n, pt.g, pt.p, pt.start)
		d.Name = migName(pt.g, pt.p, pt.start)
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: pt.set, Counters: consume(pt.g.MIG, pt.p, pt.start)}}
		a := Allocatable{Kind: KindMIG, GPUUUID: pt.g.UUID, GPUIndex: pt.g.Index, Profile: pt.p.Name, Start: pt.start,
			Dynamic: true, MemoryBytes: pt.p.MemoryBytes}
		add(d, a, pt.g.UUID)
	}
	r.Slices = split(counters, devices)
	return r, nil
}

type partition struct {
	g     inventory.GPU
	p     inventory.MIGProfile
	start int
	set   string
}

// split respects the per-slice limits: counters in slices of their own (8
// sets each), devices 128 per slice, or 64 when any consumes counters or
// carries taints.
func split(counters []resourceapi.CounterSet, devices []resourceapi.Device) []resourceslice.Slice {
	var out []resourceslice.Slice
	for i := 0; i < len(counters); i += resourceapi.ResourceSliceMaxCounterSets {
		out = append(out, resourceslice.Slice{SharedCounters: counters[i:min(i+resourceapi.ResourceSliceMaxCounterSets, len(counters))]})
	}
	limit := resourceapi.ResourceSliceMaxDevices
	for _, d := range devices {
		if len(d.ConsumesCounters) > 0 || len(d.Taints) > 0 {
			limit = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
	}
	for i := 0; i < len(devices); i += limit {
		out = append(out, resourceslice.Slice{Devices: devices[i:min(i+limit, len(devices))]})
	}
	if len(out) == 0 {
		// An empty pool says the driver runs and has no devices.
		out = append(out, resourceslice.Slice{})
	}
	return out
}

func wholeDevice(n *inventory.Node, g inventory.GPU) resourceapi.Device {
	a := gpuAttributes(n, g, KindGPU)
	a.str("uuid", g.UUID)
	a.str("computeFraction", "1")
	if g.Multiprocessors > 0 {
		a.num("multiprocessors", g.Multiprocessors)
	}
	return resourceapi.Device{Attributes: a, Capacity: capacity(g.MemoryBytes, milli(1, 1))}
}

func vgpuDevice(n *inventory.Node, g inventory.GPU) resourceapi.Device {
	d := wholeDevice(n, g)
	a := attrs(d.Attributes)
	a.str("type", KindVGPU)
	a.str("vgpuProfile", g.VGPU.Profile)
	a.str("vgpuFraction", g.VGPU.Fraction)
	a.str("computeFraction", g.VGPU.Fraction)
	num, den := fractionParts(g.VGPU.Fraction)
	d.Capacity["compute"] = resourceapi.DeviceCapacity{Value: milli(num, den)}
	return d
}

func migDevice(n *inventory.Node, g inventory.GPU, p inventory.MIGProfile, start int) resourceapi.Device {
	a := gpuAttributes(n, g, KindMIG)
	a.str("parentUUID", g.UUID)
	a.str("profile", p.Name)
	a.num("placementStart", start)
	a.num("memorySlices", p.MemorySlices)
	a.num("computeSlices", p.ComputeSlices)
	a.num("multiprocessors", p.Multiprocessors)
	a.str("computeFraction", fmt.Sprintf("%d/%d", p.ComputeSlices, g.MIG.ComputeSlices))
	return resourceapi.Device{Attributes: a, Capacity: capacity(p.MemoryBytes, milli(p.ComputeSlices, g.MIG.ComputeSlices))}
}

// sharedDevice is a whole GPU many claims share: each consumes memory (in
// whole Gi; the whole GPU when the claim names none, so a claim that does
// not ask gets the GPU to itself) and a compute share (none by default:
// plain time-sharing; a share caps the claim's SMs through MPS).
func sharedDevice(n *inventory.Node, g inventory.GPU) resourceapi.Device {
	d := wholeDevice(n, g)
	attrs(d.Attributes).str("sharing", "consumable")
	gi := resource.MustParse("1Gi")
	mem := *resource.NewQuantity(g.MemoryBytes/(1<<30)*(1<<30), resource.BinarySI)
	zero := resource.MustParse("0")
	one := resource.MustParse("1")
	step := resource.MustParse("10m")
	d.AllowMultipleAllocations = ptr.To(true)
	d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"memory": {Value: mem, RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(mem.DeepCopy()),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &gi, Step: ptr.To(gi.DeepCopy())}}},
		"compute": {Value: one, RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &zero,
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(zero.DeepCopy()), Max: ptr.To(one.DeepCopy()), Step: &step}}},
	}
	return d
}

// counterSet is one MIG-capable GPU's counters: one per memory slice, so
// partitions that overlap in placement cannot both be allocated, and the
// compute slices, so their sum never exceeds the GPU's.
func counterSet(name string, m *inventory.MIG) resourceapi.CounterSet {
	c := map[string]resourceapi.Counter{"compute-slices": {Value: *resource.NewQuantity(int64(m.ComputeSlices), resource.DecimalSI)}}
	for s := range m.MemorySlices {
		c[memSlice(s)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	if hasMediaExtensions(m) {
		c["media-extensions"] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	return resourceapi.CounterSet{Name: name, Counters: c}
}

func consume(m *inventory.MIG, p inventory.MIGProfile, start int) map[string]resourceapi.Counter {
	c := map[string]resourceapi.Counter{"compute-slices": {Value: *resource.NewQuantity(int64(p.ComputeSlices), resource.DecimalSI)}}
	for s := start; s < start+p.MemorySlices; s++ {
		c[memSlice(s)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	if isMediaExtension(p.Name) {
		c["media-extensions"] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	return c
}

func consumeAll(m *inventory.MIG) map[string]resourceapi.Counter {
	return counterSet("", m).Counters
}

// migName names a partition by GPU, profile and placement: "gpu-0-mig-3g-40gb-4".
func migName(g inventory.GPU, p inventory.MIGProfile, start int) string {
	return fmt.Sprintf("gpu-%d-mig-%s-%d", g.Index, inventory.DNSLabel(p.Name), start)
}

func memSlice(s int) string { return "memory-slice-" + strconv.Itoa(s) }

func isMediaExtension(profile string) bool {
	return len(profile) > 3 && profile[len(profile)-3:] == "+me"
}

func hasMediaExtensions(m *inventory.MIG) bool {
	for _, p := range m.Profiles {
		if isMediaExtension(p.Name) {
			return true
		}
	}
	return false
}

func fractionParts(f string) (int, int) {
	var n, d int
	if _, err := fmt.Sscanf(f, "%d/%d", &n, &d); err == nil && n > 0 && d >= n {
		return n, d
	}
	return 1, 1
}

// taintValue fits a reason into a label value.
func taintValue(reason string) string {
	out := []byte{}
	for i := 0; i < len(reason) && len(out) < 63; i++ {
		c := reason[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			out = append(out, c)
		} else {
			out = append(out, '-')
		}
	}
	for len(out) > 0 && !alnum(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	for len(out) > 0 && !alnum(out[0]) {
		out = out[1:]
	}
	return string(out)
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// ResourceSlices are the slices as objects of node's pool, for printing
// (dry runs) and what-if snapshots; a live node publishes through the
// resourceslice controller instead, which names them itself.
func (r *Result) ResourceSlices(driver, node string) []resourceapi.ResourceSlice {
	out := make([]resourceapi.ResourceSlice, len(r.Slices))
	for i, s := range r.Slices {
		out[i] = resourceapi.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%x-%s-%s", i, driver, node)},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node), Devices: s.Devices, SharedCounters: s.SharedCounters,
				Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: int64(len(r.Slices))}},
		}
	}
	return out
}
