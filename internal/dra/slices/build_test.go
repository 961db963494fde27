package slices

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
)

func node(t testing.TB, profile string, layout ...string) *inventory.Node {
	t.Helper()
	c := catalog.MustDefault()
	p, err := profiles.Lookup(c, profile)
	if err != nil {
		t.Fatal(err)
	}
	n, err := profiles.Discover(c, p, profiles.Node{Name: "node-a", MIGLayout: layout, NVLinkDomain: "rack", CliqueID: 1})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func devicesOf(r *Result) []resourceapi.Device {
	var out []resourceapi.Device
	for _, s := range r.Slices {
		out = append(out, s.Devices...)
	}
	return out
}

func str(d resourceapi.Device, k string) string {
	if a, ok := d.Attributes[resourceapi.QualifiedName(k)]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func TestLayouts(t *testing.T) {
	cases := []struct {
		name                   string
		profile                string
		layout                 []string
		f                      Features
		counterSlices, devices int
		kinds                  map[string]int
	}{
		{"whole", "hgx-h100", nil, Features{}, 0, 8, map[string]int{"gpu": 8}},
		{"dynamic MIG", "hgx-h100", nil, Features{DynamicMIG: true}, 1, 8 * (1 + 7 + 7 + 4 + 3 + 2 + 1 + 1), map[string]int{"gpu": 8, "mig": 8 * 25}},
		{"static MIG", "hgx-h100", []string{"3g.40gb", "3g.40gb"}, Features{DynamicMIG: true}, 0, 16, map[string]int{"mig": 16}},
		{"shared", "hgx-h200", nil, Features{SharedGPUs: true}, 0, 8, map[string]int{"gpu": 8}},
		{"vgpu", "azure-nv12ads-a10-v5", nil, Features{VGPU: true}, 0, 1, map[string]int{"vgpu": 1}},
		{"vgpu as NVIDIA publishes it", "azure-nv12ads-a10-v5", nil, Features{}, 0, 1, map[string]int{"gpu": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Build(node(t, tc.profile, tc.layout...), tc.f, nil)
			if err != nil {
				t.Fatal(err)
			}
			counterSlices := 0
			for _, s := range r.Slices {
				if len(s.SharedCounters) > 0 {
					counterSlices++
					if len(s.Devices) > 0 {
						t.Error("a slice holds both counters and devices")
					}
				}
				limit := resourceapi.ResourceSliceMaxDevices
				for _, d := range s.Devices {
					if len(d.ConsumesCounters) > 0 || len(d.Taints) > 0 {
						limit = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
					}
				}
				if len(s.Devices) > limit {
					t.Errorf("slice with %d devices, limit %d", len(s.Devices), limit)
				}
			}
			devs := devicesOf(r)
			kinds := map[string]int{}
			seen := map[string]bool{}
			for _, d := range devs {
				kinds[str(d, "type")]++
				if seen[d.Name] {
					t.Errorf("duplicate device %s", d.Name)
				}
				seen[d.Name] = true
				if len(d.Attributes)+len(d.Capacity) > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
					t.Errorf("%s: %d attributes and capacities", d.Name, len(d.Attributes)+len(d.Capacity))
				}
				if _, ok := r.Devices[d.Name]; !ok {
					t.Errorf("%s not in the allocatable index", d.Name)
				}
			}
			if counterSlices != tc.counterSlices || len(devs) != tc.devices {
				t.Errorf("%d counter slices, %d devices; want %d, %d", counterSlices, len(devs), tc.counterSlices, tc.devices)
			}
			for k, n := range tc.kinds {
				if kinds[k] != n {
					t.Errorf("%d devices of type %s, want %d (%v)", kinds[k], k, n, kinds)
				}
			}
		})
	}
}

func TestAttributes(t *testing.T) {
	r, _ := Build(node(t, "azure-nv12ads-a10-v5"), Features{VGPU: true}, nil)
	d := devicesOf(r)[0]
	for k, want := range map[string]string{"productName": "NVIDIA A10", "vgpuProfile": "NVIDIA A10-8Q", "vgpuFraction": "1/3", "computeFraction": "1/3", "architecture": "Ampere"} {
		if got := str(d, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if v := d.Attributes["cudaComputeCapability"].VersionValue; v == nil || *v != "8.6.0" {
		t.Errorf("cudaComputeCapability %v", v)
	}
	if m := d.Capacity["memory"].Value; m.Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("memory %s", m.String())
	}
	if c := d.Capacity["compute"].Value; c.Cmp(resource.MustParse("333m")) != 0 {
		t.Errorf("compute %s", c.String())
	}

	r, _ = Build(node(t, "gb200-nvl72"), Features{NVLinkDomains: true}, nil)
	d = devicesOf(r)[0]
	if str(d, "nvlinkClique") == "" || str(d, "nvlinkDomain") == "" || str(d, string(PCIeRootAttribute)) == "" {
		t.Errorf("gb200 attributes %v", d.Attributes)
	}
	r, _ = Build(node(t, "gb200-nvl72"), Features{}, nil)
	if str(devicesOf(r)[0], "nvlinkClique") != "" {
		t.Error("nvlink attributes published with the feature off")
	}

	r, _ = Build(node(t, "hgx-h100"), Features{DynamicMIG: true}, nil)
	for _, d := range devicesOf(r) {
		if d.Name == "gpu-0-mig-1g-10gb-3" {
			if str(d, "profile") != "1g.10gb" || str(d, "computeFraction") != "1/7" || str(d, "parentUUID") == "" {
				t.Errorf("partition %v", d.Attributes)
			}
			if c := d.Capacity["compute"].Value; c.Cmp(resource.MustParse("142m")) != 0 {
				t.Errorf("1g compute %s, want 142m", c.String())
			}
			return
		}
	}
	t.Error("no gpu-0-mig-1g-10gb-3")
}

func TestSharedGPUPolicy(t *testing.T) {
	r, _ := Build(node(t, "hgx-h100"), Features{SharedGPUs: true}, nil)
	d := devicesOf(r)[0]
	if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		t.Fatal("shared GPU does not allow multiple allocations")
	}
	mem := d.Capacity["memory"]
	if mem.Value.Cmp(resource.MustParse("79Gi")) != 0 || mem.RequestPolicy.Default.Cmp(mem.Value) != 0 {
		t.Errorf("memory %s default %s: want 79Gi, the whole GPU by default", mem.Value.String(), mem.RequestPolicy.Default.String())
	}
	if c := d.Capacity["compute"]; c.RequestPolicy.Default.Sign() != 0 || c.RequestPolicy.ValidRange.Max.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("compute policy %+v", c.RequestPolicy)
	}
	if !r.Devices[d.Name].Shared {
		t.Error("index does not mark the device shared")
	}
}

func TestUnhealthyTaint(t *testing.T) {
	n := node(t, "hgx-h100")
	r, _ := Build(n, Features{DynamicMIG: true}, map[string]string{n.GPUs[2].UUID: "XID 79: GPU has fallen off the bus"})
	tainted := 0
	for _, d := range devicesOf(r) {
		if len(d.Taints) > 0 {
			tainted++
			if r.Devices[d.Name].GPUIndex != 2 || d.Taints[0].Key != UnhealthyTaintKey || d.Taints[0].Effect != resourceapi.DeviceTaintEffectNoSchedule {
				t.Errorf("%s: taint %+v", d.Name, d.Taints)
			}
			if v := d.Taints[0].Value; v != "XID-79--GPU-has-fallen-off-the-bus" {
				t.Errorf("taint value %q", v)
			}
		}
	}
	if tainted != 26 {
		t.Errorf("%d tainted devices, want GPU 2 and its 25 partitions (7 of them +me)", tainted)
	}
}

func TestEmptyNodePublishesEmptyPool(t *testing.T) {
	r, err := Build(&inventory.Node{}, Features{}, nil)
	if err != nil || len(r.Slices) != 1 || len(r.Slices[0].Devices) != 0 {
		t.Errorf("empty node: %+v %v", r, err)
	}
}
