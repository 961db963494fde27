package devicepool

import (
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// counterKey is one counter of one counter set in one pool.
type counterKey struct{ pool, set, counter string }

// usage is what other claims hold: allocated devices, and the counters the
// allocated partitionable devices consume.
func usage(s Snapshot) (map[deviceRef]bool, map[counterKey]resource.Quantity) {
	consumes := map[deviceRef][]resourcev1.DeviceCounterConsumption{}
	for _, sl := range s.Slices {
		for _, d := range sl.Spec.Devices {
			if len(d.ConsumesCounters) > 0 {
				consumes[deviceRef{sl.Spec.Driver, sl.Spec.Pool.Name, d.Name}] = d.ConsumesCounters
			}
		}
	}
	allocated := map[deviceRef]bool{}
	consumed := map[counterKey]resource.Quantity{}
	for _, c := range s.Claims {
		if c.Status.Allocation == nil || mine(c, s) {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			ref := deviceRef{r.Driver, r.Pool, r.Device}
			allocated[ref] = true
			for _, cc := range consumes[ref] {
				for name, v := range cc.Counters {
					k := counterKey{r.Pool, cc.CounterSet, name}
					q := consumed[k]
					q.Add(v.Value)
					consumed[k] = q
				}
			}
		}
	}
	return allocated, consumed
}

func mine(c resourcev1.ResourceClaim, s Snapshot) bool {
	for _, o := range c.OwnerReferences {
		if s.Mine[o.UID] {
			return true
		}
	}
	for _, r := range c.Status.ReservedFor {
		if s.Mine[r.UID] {
			return true
		}
	}
	return false
}

// fits reports whether a partitionable device's counters are all unused.
// Counters are per memory slice, so a used slice rules out every placement
// that needs it.
func fits(d resourcev1.Device, pool string, consumed map[counterKey]resource.Quantity) bool {
	for _, cc := range d.ConsumesCounters {
		for name := range cc.Counters {
			if strings.HasPrefix(name, "compute") {
				continue // shared by count, not by slice; the memory slices decide
			}
			if q, ok := consumed[counterKey{pool, cc.CounterSet, name}]; ok && !q.IsZero() {
				return false
			}
		}
	}
	return true
}

// attribute reads a device attribute by its short name, qualified by the
// driver's domain or not.
func attribute(driver string, d resourcev1.Device, name string) (resourcev1.DeviceAttribute, bool) {
	if a, ok := d.Attributes[resourcev1.QualifiedName(name)]; ok {
		return a, true
	}
	a, ok := d.Attributes[resourcev1.QualifiedName(driver+"/"+name)]
	return a, ok
}

func str(driver string, d resourcev1.Device, name string) string {
	if a, ok := attribute(driver, d, name); ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// productIndex maps a GPU's product name to the catalog's GPU.
func productIndex(cat *catalog.Catalog) map[string]*catalog.GPU {
	out := map[string]*catalog.GPU{}
	for _, g := range cat.GPUs {
		if g.ProductName != "" {
			out[strings.ToLower(g.ProductName)] = g
		}
	}
	return out
}

// kindOf names a published device as a catalog device: its product, and
// its MIG profile or vGPU fraction (gpuplane's attributes) or, for
// NVIDIA's driver, its profile and type.
func kindOf(cat *catalog.Catalog, products map[string]*catalog.GPU, driver string, d resourcev1.Device) (string, string, bool) {
	product := str(driver, d, "productName")
	g, ok := products[strings.ToLower(product)]
	if !ok {
		if product == "" {
			product = "(no productName)"
		}
		return "", product, false
	}
	slice := ""
	switch strings.ToLower(str(driver, d, "type")) {
	case "mig":
		slice = str(driver, d, "profile")
	case "vgpu":
		slice = str(driver, d, "vgpuFraction")
	default:
		slice = shareByMemory(cat, g, driver, d)
	}
	dev, err := cat.Device(g.Name, slice)
	if err != nil {
		return "", product + " " + slice, false
	}
	return dev.Name(), product, true
}

// shareByMemory finds the vGPU size of a device published as a plain GPU
// (as NVIDIA's driver publishes a vGPU guest) from its memory: a device
// with clearly less memory than its GPU is the share whose memory is the
// largest not above it.
func shareByMemory(cat *catalog.Catalog, g *catalog.GPU, driver string, d resourcev1.Device) string {
	c, ok := d.Capacity[resourcev1.QualifiedName("memory")]
	if !ok {
		c, ok = d.Capacity[resourcev1.QualifiedName(driver+"/memory")]
	}
	if !ok {
		return ""
	}
	gib := float64(c.Value.Value()) / (1 << 30)
	if gib >= 0.9*g.MemoryGiB {
		return ""
	}
	best, bestMem := "", 0.0
	for _, v := range cat.VGPU[g.Name] {
		if v.MemoryGiB <= gib*1.05 && v.MemoryGiB > bestMem {
			best, bestMem = v.Fraction, v.MemoryGiB
		}
	}
	return best
}
