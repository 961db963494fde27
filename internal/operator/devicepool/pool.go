// Package devicepool turns the cluster's DRA state (ResourceSlices,
// DeviceClasses, allocated ResourceClaims) into the device pool configure
// searches: which catalog device kinds are free, how many, how many a node
// holds, and how many physical GPUs they sit on. It reads no API itself.
package devicepool

import (
	"context"
	"fmt"
	"sort"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/configure"
)

// Snapshot is the DRA state a pool is built from.
type Snapshot struct {
	Slices  []resourcev1.ResourceSlice
	Classes []resourcev1.DeviceClass
	Claims  []resourcev1.ResourceClaim
	// Mine are the pods whose claims count as free (the deployment's own,
	// which a new plan replaces).
	Mine map[types.UID]bool
	// NodeLabels are the nodes' labels, for Filter.NodeSelector.
	NodeLabels map[string]map[string]string
}

// Filter says which devices may be used.
type Filter struct {
	// Classes are DeviceClass names; a device must match one of them.
	Classes []string
	// Selector is an extra CEL expression every device must satisfy.
	Selector string
	// NodeSelector, when set, keeps the devices of nodes whose labels
	// match it: the pods' node selector, so the plan uses only devices
	// the pods can reach.
	NodeSelector map[string]string
	// ClassesField and SelectorField name Classes and Selector in errors
	// as the caller's user wrote them (default devices.classes, devices.selector).
	ClassesField, SelectorField string
}

// Kind is one free device kind.
type Kind struct {
	Device string // catalog device name
	Free   int
	// PerNode is the most free devices of the kind on one node (bounds TP).
	PerNode int
	Nodes   int
}

// Pool is the result.
type Pool struct {
	Kinds []Kind
	// GPUs is the physical GPUs with free capacity under the filter.
	GPUs int
	// Skipped counts matching devices the catalog does not know, by product.
	Skipped map[string]int
}

// Entries is the pool as configure's pool entries.
func (p *Pool) Entries() []configure.PoolEntry {
	out := make([]configure.PoolEntry, 0, len(p.Kinds))
	for _, k := range p.Kinds {
		// A node publishing more devices than any node holds still bounds
		// tensor parallelism no lower than configure's ceiling does.
		out = append(out, configure.PoolEntry{Device: k.Device, Count: k.Free, GPUsPerNode: min(k.PerNode, configure.MaxGPUsPerNode)})
	}
	return out
}

// String summarises the pool, e.g. "8 x h100_sxm on 1 node; 14 x h100_sxm:1g.10gb ...".
func (p *Pool) String() string {
	if len(p.Kinds) == 0 {
		return "no free devices"
	}
	var parts []string
	for _, k := range p.Kinds {
		parts = append(parts, fmt.Sprintf("%d x %s on %d node(s)", k.Free, k.Device, k.Nodes))
	}
	return fmt.Sprintf("%s (%d GPUs)", strings.Join(parts, "; "), p.GPUs)
}

type deviceRef struct {
	driver, pool, name string
}

// Build evaluates the filter on every published device and counts the free ones.
func Build(ctx context.Context, cat *catalog.Catalog, s Snapshot, f Filter) (*Pool, error) {
	if f.ClassesField == "" {
		f.ClassesField = "devices.classes"
	}
	if f.SelectorField == "" {
		f.SelectorField = "devices.selector"
	}
	if len(f.Classes) == 0 {
		return nil, fmt.Errorf("%s: no DeviceClass to choose from", f.ClassesField)
	}
	classes := map[string]*resourcev1.DeviceClass{}
	for i := range s.Classes {
		classes[s.Classes[i].Name] = &s.Classes[i]
	}
	var sels []string
	for _, name := range f.Classes {
		c, ok := classes[name]
		if !ok {
			return nil, fmt.Errorf("%s: DeviceClass %q does not exist in the cluster", f.ClassesField, name)
		}
		var exprs []string
		for _, sel := range c.Spec.Selectors {
			if sel.CEL != nil {
				exprs = append(exprs, "("+sel.CEL.Expression+")")
			}
		}
		if len(exprs) == 0 {
			exprs = []string{"true"}
		}
		sels = append(sels, strings.Join(exprs, " && "))
	}
	cache := cel.NewCache(64, cel.Features{EnableConsumableCapacity: true})
	compiled := make([]cel.CompilationResult, 0, len(sels))
	for _, e := range sels {
		r := cache.GetOrCompile(e)
		if r.Error != nil {
			return nil, fmt.Errorf("%s: a class selector does not compile: %v", f.ClassesField, r.Error)
		}
		compiled = append(compiled, r)
	}
	var extra *cel.CompilationResult
	if f.Selector != "" {
		r := cache.GetOrCompile(f.Selector)
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %q does not compile: %v; write a CEL expression over device.attributes and device.capacity, as in a ResourceClaim", f.SelectorField, f.Selector, r.Error)
		}
		extra = &r
	}

	allocated, consumed := usage(s)
	products := productIndex(cat)
	type nodeKind struct{ node, kind string }
	perNode := map[nodeKind]int{}
	gpus := map[string]bool{}
	skipped := map[string]int{}
	// Partitions of one GPU overlap: count each profile at most as many
	// times as the GPU's remaining counters allow.
	type setProfile struct{ node, set, kind string }
	partitions := map[setProfile]int{}
	for _, sl := range s.Slices {
		node := ""
		if sl.Spec.NodeName != nil {
			node = *sl.Spec.NodeName
		}
		if node != "" && !matchLabels(f.NodeSelector, s.NodeLabels[node]) {
			continue
		}
		for _, d := range sl.Spec.Devices {
			ref := deviceRef{sl.Spec.Driver, sl.Spec.Pool.Name, d.Name}
			if allocated[ref] && !shared(d) {
				continue
			}
			if tainted(d) {
				continue
			}
			cd := cel.Device{Driver: sl.Spec.Driver, Attributes: d.Attributes, Capacity: d.Capacity, AllowMultipleAllocations: d.AllowMultipleAllocations}
			ok, err := matchesAny(ctx, compiled, cd)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if extra != nil {
				m, _, err := extra.DeviceMatches(ctx, cd)
				if err != nil {
					return nil, fmt.Errorf("%s: %q on device %s/%s: %v", f.SelectorField, f.Selector, sl.Spec.Pool.Name, d.Name, err)
				}
				if !m {
					continue
				}
			}
			kind, product, ok := kindOf(cat, products, sl.Spec.Driver, d)
			if !ok {
				skipped[product]++
				continue
			}
			if len(d.ConsumesCounters) > 0 {
				set := sl.Spec.Pool.Name + "/" + d.ConsumesCounters[0].CounterSet
				if !fits(d, sl.Spec.Pool.Name, consumed) {
					continue
				}
				if kindIsWhole(kind) {
					perNode[nodeKind{node, kind}]++
				} else {
					partitions[setProfile{node, set, kind}]++
				}
				gpus[set] = true
				continue
			}
			perNode[nodeKind{node, kind}]++
			gpus[gpuKey(sl, d)] = true
		}
	}
	for sp, n := range partitions {
		dev, err := cat.Device(sp.kind, "")
		if err != nil {
			continue
		}
		most := n
		for _, p := range cat.MIG[dev.GPU.Name] {
			if p.Profile == dev.Slice && p.MaxInstances > 0 {
				most = min(n, p.MaxInstances)
			}
		}
		perNode[nodeKind{sp.node, sp.kind}] += most
	}
	byKind := map[string]*Kind{}
	for nk, n := range perNode {
		k := byKind[nk.kind]
		if k == nil {
			k = &Kind{Device: nk.kind}
			byKind[nk.kind] = k
		}
		k.Free += n
		k.Nodes++
		k.PerNode = max(k.PerNode, n)
	}
	p := &Pool{GPUs: len(gpus), Skipped: skipped}
	for _, k := range byKind {
		p.Kinds = append(p.Kinds, *k)
	}
	sort.Slice(p.Kinds, func(i, j int) bool { return p.Kinds[i].Device < p.Kinds[j].Device })
	return p, nil
}

func matchLabels(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func kindIsWhole(name string) bool { return !strings.Contains(name, ":") }

func matchesAny(ctx context.Context, sels []cel.CompilationResult, d cel.Device) (bool, error) {
	for _, s := range sels {
		ok, _, err := s.DeviceMatches(ctx, d)
		if err != nil {
			// A class selector that errors on this device (a missing
			// attribute) does not select it, as the scheduler treats it.
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func shared(d resourcev1.Device) bool {
	return d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
}

func tainted(d resourcev1.Device) bool {
	for _, t := range d.Taints {
		if t.Effect == resourcev1.DeviceTaintEffectNoSchedule || t.Effect == resourcev1.DeviceTaintEffectNoExecute {
			return true
		}
	}
	return false
}

// gpuKey names the physical GPU a device sits on: its node and index, or
// the device itself when it does not say.
func gpuKey(sl resourcev1.ResourceSlice, d resourcev1.Device) string {
	for _, name := range []string{"parentIndex", "index"} { // NVIDIA's MIG devices name their GPU parentIndex
		if a, ok := attribute(sl.Spec.Driver, d, name); ok && a.IntValue != nil {
			return fmt.Sprintf("%s/%s/%d", sl.Spec.Driver, sl.Spec.Pool.Name, *a.IntValue)
		}
	}
	return sl.Spec.Driver + "/" + sl.Spec.Pool.Name + "/" + d.Name
}
