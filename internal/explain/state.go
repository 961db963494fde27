package explain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// features are what Kubernetes 1.37 turns on by default.
var features = structured.Features{AdminAccess: true, ConsumableCapacity: true, DeviceTaints: true,
	PartitionableDevices: true, PrioritizedList: true, DeviceBindingAndStatus: true}

// holder is who holds a device: the claim and, for shared devices, how much.
type holder struct {
	claim    string
	shareID  *types.UID
	consumed map[resourceapi.QualifiedName]resource.Quantity
}

// state is the snapshot prepared for allocation: taint rules applied to
// the slices, what allocated claims hold, a CEL cache.
type state struct {
	snap    *Snapshot
	slices  []*resourceapi.ResourceSlice
	classes map[string]*resourceapi.DeviceClass
	holders map[structured.DeviceID][]holder
	index   map[structured.DeviceID]*resourceapi.Device
	byName  map[string]structured.DeviceID // "pool/device"
	// byNode holds node-local slices by node; others need node matching.
	byNode map[string][]*resourceapi.ResourceSlice
	others []*resourceapi.ResourceSlice
	onNode map[string][]nodeDevice
	// counters are the pools' counter sets, by driver/pool and set name.
	counters map[string]map[string]resourceapi.CounterSet
	cel      *cel.Cache
}

func newState(s *Snapshot, skip map[types.UID]bool) *state {
	st := &state{snap: s, classes: map[string]*resourceapi.DeviceClass{}, holders: map[structured.DeviceID][]holder{},
		cel: cel.NewCache(1000, cel.Features{EnableConsumableCapacity: true})}
	for _, c := range s.Classes {
		st.classes[c.Name] = c
	}
	st.slices = applyTaintRules(s.Slices, s.TaintRules)
	st.index = map[structured.DeviceID]*resourceapi.Device{}
	st.byName = map[string]structured.DeviceID{}
	st.byNode = map[string][]*resourceapi.ResourceSlice{}
	st.onNode = map[string][]nodeDevice{}
	st.counters = map[string]map[string]resourceapi.CounterSet{}
	for _, sl := range st.slices {
		if sl.Spec.NodeName != nil && *sl.Spec.NodeName != "" {
			st.byNode[*sl.Spec.NodeName] = append(st.byNode[*sl.Spec.NodeName], sl)
		} else {
			st.others = append(st.others, sl)
		}
		for _, cs := range sl.Spec.SharedCounters {
			k := sl.Spec.Driver + "/" + sl.Spec.Pool.Name
			if st.counters[k] == nil {
				st.counters[k] = map[string]resourceapi.CounterSet{}
			}
			st.counters[k][cs.Name] = cs
		}
		for i := range sl.Spec.Devices {
			id := structured.MakeDeviceID(sl.Spec.Driver, sl.Spec.Pool.Name, sl.Spec.Devices[i].Name)
			st.index[id] = &sl.Spec.Devices[i]
			st.byName[sl.Spec.Pool.Name+"/"+sl.Spec.Devices[i].Name] = id
		}
	}
	for _, c := range s.Claims {
		if c.Status.Allocation == nil || skip[c.UID] {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			st.holders[id] = append(st.holders[id], holder{claim: c.Namespace + "/" + c.Name, shareID: r.ShareID, consumed: r.ConsumedCapacity})
		}
	}
	return st
}

// allocatedState is the allocator's view of what is taken.
func (st *state) allocatedState() structured.AllocatedState {
	a := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	for id, hs := range st.holders {
		for _, h := range hs {
			h.addTo(a, id)
		}
	}
	return a
}

// addTo records what h holds of device id in a.
func (h holder) addTo(a structured.AllocatedState, id structured.DeviceID) {
	if h.shareID == nil {
		a.AllocatedDevices.Insert(id)
		return
	}
	a.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, h.shareID))
	if len(h.consumed) > 0 {
		a.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, h.consumed))
	}
}

// List and Get make state a DeviceClassLister.
func (st *state) List() ([]*resourceapi.DeviceClass, error) { return st.snap.Classes, nil }

// Get returns a class.
func (st *state) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := st.classes[name]; ok {
		return c, nil
	}
	known := make([]string, 0, len(st.classes))
	for n := range st.classes {
		known = append(known, n)
	}
	sort.Strings(known)
	have := "none"
	if len(known) > 0 {
		have = strings.Join(known, ", ")
	}
	return nil, fmt.Errorf("deviceclass %q not found (known: %s); fix the claim's deviceClassName, or create the class: gpuplane's come with its Helm chart and `gpuplane dra-driver classes` prints them (add them to a --from dump)", name, have)
}

// allocate runs the scheduler's allocator for claims on every node (in
// name order) and returns the nodes where all of them fit.
func (st *state) allocate(ctx context.Context, claims []*resourceapi.ResourceClaim, nodes []*corev1.Node) (map[string][]resourceapi.AllocationResult, error) {
	alloc, err := structured.NewAllocator(ctx, features, st.allocatedState(), st, st.slices, st.cel)
	if err != nil {
		return nil, fmt.Errorf("allocator: %w", err)
	}
	pending := make([]*resourceapi.ResourceClaim, 0, len(claims))
	for _, c := range claims {
		c = c.DeepCopy()
		c.Status = resourceapi.ResourceClaimStatus{}
		pending = append(pending, c)
	}
	fits := map[string][]resourceapi.AllocationResult{}
	for _, n := range nodes {
		res, err := alloc.Allocate(ctx, n, pending)
		if err != nil {
			if errors.Is(err, structured.ErrFailedAllocationOnNode) {
				continue
			}
			return nil, fmt.Errorf("allocate on %s: %w", n.Name, err)
		}
		if res != nil {
			fits[n.Name] = res
		}
	}
	return fits, nil
}

// applyTaintRules adds the taints of DeviceTaintRules to the devices they
// select, as the scheduler does before allocating.
func applyTaintRules(slices []*resourceapi.ResourceSlice, rules []*resourceapi.DeviceTaintRule) []*resourceapi.ResourceSlice {
	if len(rules) == 0 {
		return slices
	}
	out := make([]*resourceapi.ResourceSlice, len(slices))
	for i, s := range slices {
		var patched *resourceapi.ResourceSlice
		for j, d := range s.Spec.Devices {
			for _, r := range rules {
				sel := r.Spec.DeviceSelector
				if sel != nil && (sel.Driver != nil && *sel.Driver != s.Spec.Driver || sel.Pool != nil && *sel.Pool != s.Spec.Pool.Name ||
					sel.Device != nil && *sel.Device != d.Name) {
					continue
				}
				if patched == nil {
					patched = s.DeepCopy()
				}
				patched.Spec.Devices[j].Taints = append(patched.Spec.Devices[j].Taints, r.Spec.Taint)
			}
		}
		if patched != nil {
			out[i] = patched
		} else {
			out[i] = s
		}
	}
	return out
}

// nodesSorted returns the snapshot's nodes by name.
func (st *state) nodesSorted() []*corev1.Node {
	ns := append([]*corev1.Node(nil), st.snap.Nodes...)
	sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	return ns
}

func isNodeFailure(err error) bool { return errors.Is(err, structured.ErrFailedAllocationOnNode) }
