package explain

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Reason kinds, the first word of a device's verdict.
const (
	KindCandidate = "candidate"
	KindSelector  = "selector"
	KindInUse     = "in-use"
	KindCapacity  = "capacity"
	KindCounter   = "counter"
	KindTaint     = "taint"
	KindError     = "error"
)

// DeviceVerdict is why one device can or cannot serve one request.
type DeviceVerdict struct {
	Device string `json:"device"` // pool/device
	Kind   string `json:"kind"`
	// Reason is the failed condition with the values seen.
	Reason string `json:"reason,omitempty"`
	// Condition is the selector conjunct that is false (selector kind).
	Condition string `json:"condition,omitempty"`
}

// requestSpec is one request or firstAvailable alternative, flattened.
type requestSpec struct {
	name        string // "gpu" or "gpu/h200"
	class       string
	selectors   []resourceapi.DeviceSelector
	count       int64
	all         bool
	tolerations []resourceapi.DeviceToleration
	capacity    map[resourceapi.QualifiedName]resource.Quantity
}

// requestsOf flattens a claim's requests, each a list of its alternatives
// (one for a plain request). The claim has its API defaults (withDefaults).
func requestsOf(c *resourceapi.ResourceClaim) [][]requestSpec {
	var out [][]requestSpec
	for _, r := range c.Spec.Devices.Requests {
		if e := r.Exactly; e != nil {
			out = append(out, []requestSpec{newSpec(r.Name, e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, e.Capacity)})
			continue
		}
		var alts []requestSpec
		for _, s := range r.FirstAvailable {
			alts = append(alts, newSpec(r.Name+"/"+s.Name, s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, s.Tolerations, s.Capacity))
		}
		out = append(out, alts)
	}
	return out
}

func newSpec(name, class string, sels []resourceapi.DeviceSelector, mode resourceapi.DeviceAllocationMode, count int64,
	tols []resourceapi.DeviceToleration, capacity *resourceapi.CapacityRequirements) requestSpec {
	rs := requestSpec{name: name, class: class, selectors: sels, count: count, all: mode == resourceapi.DeviceAllocationModeAll, tolerations: tols}
	if capacity != nil {
		rs.capacity = capacity.Requests
	}
	return rs
}

// nodeDevice is a device available on a node, with its slice's pool and driver.
type nodeDevice struct {
	driver, pool string
	dev          *resourceapi.Device
	counters     map[string]resourceapi.CounterSet // pool's counter sets by name
}

// counterSets returns a pool's counter sets by name.
func (st *state) counterSets(driver, pool string) map[string]resourceapi.CounterSet {
	return st.counters[driver+"/"+pool]
}

// devicesOn lists the devices a node can use (cached per node).
func (st *state) devicesOn(node *corev1.Node) []nodeDevice {
	if ds, ok := st.onNode[node.Name]; ok {
		return ds
	}
	var out []nodeDevice
	for _, group := range [][]*resourceapi.ResourceSlice{st.byNode[node.Name], st.others} {
		for _, s := range group {
			nodeName := ""
			if s.Spec.NodeName != nil {
				nodeName = *s.Spec.NodeName
			}
			perDevice := s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection
			if !perDevice && nodeName == "" {
				ok, err := structured.NodeMatches(features, node, nodeName, s.Spec.AllNodes != nil && *s.Spec.AllNodes, s.Spec.NodeSelector)
				if err != nil || !ok {
					continue
				}
			}
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				if perDevice {
					dn := ""
					if d.NodeName != nil {
						dn = *d.NodeName
					}
					if ok, err := structured.NodeMatches(features, node, dn, d.AllNodes != nil && *d.AllNodes, d.NodeSelector); err != nil || !ok {
						continue
					}
				}
				out = append(out, nodeDevice{driver: s.Spec.Driver, pool: s.Spec.Pool.Name, dev: d, counters: st.counterSets(s.Spec.Driver, s.Spec.Pool.Name)})
			}
		}
	}
	st.onNode[node.Name] = out
	return out
}

// judge says whether device nd can serve request rs, and if not, why.
func (st *state) judge(ctx context.Context, rs requestSpec, nd nodeDevice) DeviceVerdict {
	v := DeviceVerdict{Device: nd.pool + "/" + nd.dev.Name, Kind: KindCandidate}
	class, err := st.Get(rs.class)
	if err != nil {
		return DeviceVerdict{Device: v.Device, Kind: KindError, Reason: err.Error()}
	}
	cd := cel.Device{Driver: nd.driver, Attributes: nd.dev.Attributes, Capacity: nd.dev.Capacity, AllowMultipleAllocations: nd.dev.AllowMultipleAllocations}
	for _, group := range []struct {
		where string
		sels  []resourceapi.DeviceSelector
	}{{"class " + class.Name, class.Spec.Selectors}, {"request " + rs.name, rs.selectors}} {
		for _, sel := range group.sels {
			if sel.CEL == nil {
				continue
			}
			if bad, ok := st.firstFalse(ctx, sel.CEL.Expression, cd); !ok {
				if bad.err != nil {
					return DeviceVerdict{Device: v.Device, Kind: KindError, Condition: bad.cond, Reason: bad.err.Error()}
				}
				return DeviceVerdict{Device: v.Device, Kind: KindSelector, Condition: bad.cond,
					Reason: fmt.Sprintf("%s: `%s` is false (%s)", group.where, bad.cond, valuesSeen(bad.cond, nd.driver, nd.dev))}
			}
		}
	}
	for _, t := range nd.dev.Taints {
		if t.Effect == resourceapi.DeviceTaintEffectNone || tolerated(t, rs.tolerations) {
			continue
		}
		return DeviceVerdict{Device: v.Device, Kind: KindTaint, Reason: fmt.Sprintf("taint %s=%s:%s not tolerated", t.Key, t.Value, t.Effect)}
	}
	id := structured.MakeDeviceID(nd.driver, nd.pool, nd.dev.Name)
	holders := st.holders[id]
	shared := nd.dev.AllowMultipleAllocations != nil && *nd.dev.AllowMultipleAllocations
	if len(holders) > 0 && !shared {
		return DeviceVerdict{Device: v.Device, Kind: KindInUse, Reason: "allocated to " + holderNames(holders)}
	}
	if shared {
		if r := st.capacityShort(rs, nd, holders); r != "" {
			return DeviceVerdict{Device: v.Device, Kind: KindCapacity, Reason: r}
		}
	} else if r := capacityTooSmall(rs, nd); r != "" {
		return DeviceVerdict{Device: v.Device, Kind: KindCapacity, Reason: r}
	}
	if r := st.countersShort(nd); r != "" {
		return DeviceVerdict{Device: v.Device, Kind: KindCounter, Reason: r}
	}
	return v
}

type falseCond struct {
	cond string
	err  error
}

// firstFalse evaluates expr conjunct by conjunct and returns the first
// false one (or the whole expression when a conjunct does not compile alone).
func (st *state) firstFalse(ctx context.Context, expr string, d cel.Device) (falseCond, bool) {
	whole := st.cel.GetOrCompile(expr)
	if whole.Error != nil {
		return falseCond{cond: expr, err: fmt.Errorf("CEL: %v", whole.Error)}, false
	}
	ok, _, err := whole.DeviceMatches(ctx, d)
	if err != nil {
		return falseCond{cond: expr, err: fmt.Errorf("CEL runtime error: %v", err)}, false
	}
	if ok {
		return falseCond{}, true
	}
	for _, c := range conjuncts(expr) {
		r := st.cel.GetOrCompile(c)
		if r.Error != nil {
			return falseCond{cond: expr}, false
		}
		if ok, _, err := r.DeviceMatches(ctx, d); err != nil || !ok {
			return falseCond{cond: c}, false
		}
	}
	return falseCond{cond: expr}, false
}

func tolerated(t resourceapi.DeviceTaint, tols []resourceapi.DeviceToleration) bool {
	for _, tol := range tols {
		if tol.Key != "" && tol.Key != t.Key {
			continue
		}
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Operator == resourceapi.DeviceTolerationOpExists || tol.Value == t.Value {
			return true
		}
	}
	return false
}

func holderNames(hs []holder) string {
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.claim
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// capacityTooSmall reports a requested capacity an exclusive device does
// not have: on such devices a capacity request is a lower bound.
func capacityTooSmall(rs requestSpec, nd nodeDevice) string {
	for _, n := range slices.Sorted(maps.Keys(rs.capacity)) {
		want := rs.capacity[n]
		c, ok := nd.dev.Capacity[n]
		if !ok {
			return fmt.Sprintf("%s: requests %s, the device has no %s capacity", n, want.String(), n)
		}
		if c.Value.Cmp(want) < 0 {
			return fmt.Sprintf("%s: requests %s, the device has %s", n, want.String(), c.Value.String())
		}
	}
	return ""
}

// capacityShort reports a consumable capacity the request would overdraw.
func (st *state) capacityShort(rs requestSpec, nd nodeDevice, holders []holder) string {
	for _, n := range slices.Sorted(maps.Keys(nd.dev.Capacity)) {
		c := nd.dev.Capacity[n]
		want, ok := rs.capacity[n]
		if !ok {
			if c.RequestPolicy == nil || c.RequestPolicy.Default == nil {
				continue
			}
			want = *c.RequestPolicy.Default
		}
		used := resource.Quantity{}
		var who []string
		for _, h := range holders {
			if q, ok := h.consumed[resourceapi.QualifiedName(n)]; ok {
				used.Add(q)
				who = append(who, h.claim+" "+q.String())
			}
		}
		free := c.Value.DeepCopy()
		free.Sub(used)
		if free.Cmp(want) < 0 {
			sort.Strings(who)
			return fmt.Sprintf("%s: requests %s, %s of %s free (held by %s)", n, want.String(), free.String(), c.Value.String(), strings.Join(who, ", "))
		}
	}
	return ""
}

// countersShort reports a shared counter the device would overdraw, with
// the claims whose devices use it.
func (st *state) countersShort(nd nodeDevice) string {
	for _, cc := range nd.dev.ConsumesCounters {
		set, ok := nd.counters[cc.CounterSet]
		if !ok {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(cc.Counters)) {
			need := cc.Counters[n].Value
			used := resource.Quantity{}
			var who []string
			for id, hs := range st.holders {
				if id.Driver.String() != nd.driver || id.Pool.String() != nd.pool {
					continue
				}
				other := st.device(nd.driver, nd.pool, id.Device.String())
				if other == nil {
					continue
				}
				for _, occ := range other.ConsumesCounters {
					if occ.CounterSet == cc.CounterSet {
						if q, ok := occ.Counters[n]; ok {
							used.Add(q.Value)
							who = append(who, holderNames(hs)+" ("+other.Name+")")
						}
					}
				}
			}
			total := set.Counters[n].Value
			free := total.DeepCopy()
			free.Sub(used)
			if free.Cmp(need) < 0 {
				sort.Strings(who)
				return fmt.Sprintf("counter %s of %s used up by %s", n, cc.CounterSet, strings.Join(who, ", "))
			}
		}
	}
	return ""
}

func (st *state) device(driver, pool, name string) *resourceapi.Device {
	return st.index[structured.MakeDeviceID(driver, pool, name)]
}
