package explain

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
)

// CapacityReport says how many more claims of a template fit, and where.
type CapacityReport struct {
	Template string      `json:"template"`
	Fits     int         `json:"fits"`
	PerNode  []NodeCount `json:"perNode"`
	// Capped is set when the count stopped at the limit, not at the cluster's end.
	Capped bool `json:"capped,omitempty"`
	// WhatIfClasses are the driver's DeviceClasses added with what-if
	// nodes, the cluster having none of those names.
	WhatIfClasses []string `json:"whatIfClasses,omitempty"`
	// NoDevices says why nothing was tried: no node the pod may use has
	// devices.
	NoDevices string `json:"noDevices,omitempty"`
}

// NodeCount is how many claims one node takes.
type NodeCount struct {
	Node  string `json:"node"`
	Count int    `json:"count"`
	// WhatIf marks nodes added by --add-nodes.
	WhatIf bool `json:"whatIf,omitempty"`
}

// Capacity places claims of spec one after the other, as the scheduler
// would, node by node, until nothing more fits or limit is reached.
// nodeSelector restricts the nodes (a pod template's selector).
func Capacity(ctx context.Context, s *Snapshot, name string, spec resourceapi.ResourceClaimSpec, nodeSelector map[string]string, limit int, whatIf map[string]bool) (*CapacityReport, error) {
	rep := &CapacityReport{Template: name, WhatIfClasses: s.WhatIfClasses}
	spec = withDefaults(spec)
	if err := validateClaim(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "template", Name: name}, Spec: spec}); err != nil {
		return nil, err
	}
	snap := *s
	snap.Claims = append([]*resourceapi.ResourceClaim(nil), s.Claims...)
	st := newState(&snap, nil)
	// The allocator meets a missing class only on a node with devices;
	// name it even where there is none.
	for _, class := range requestClasses(spec) {
		if _, err := st.Get(class); err != nil {
			return nil, err
		}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: nodeSelector}}
	// What is allocated grows by each claim placed, not rebuilt per claim.
	allocated := st.allocatedState()
	usable := 0
	for _, n := range st.nodesSorted() {
		if podExcludes(pod, n) != "" || len(st.devicesOn(n)) == 0 {
			continue
		}
		usable++
		// The allocator reads every slice it is given; those of other
		// nodes cannot serve this one, and reading them made a large
		// cluster's count quadratic.
		slices := append(append([]*resourceapi.ResourceSlice(nil), st.byNode[n.Name]...), st.others...)
		count := 0
		for rep.Fits < limit {
			c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "what-if", Name: name + "-" + strconv.Itoa(rep.Fits),
				UID: types.UID("what-if-" + strconv.Itoa(rep.Fits))}, Spec: spec}
			alloc, err := structured.NewAllocator(ctx, features, allocated, st, slices, st.cel)
			if err != nil {
				return nil, fmt.Errorf("allocator: %w", err)
			}
			res, err := alloc.Allocate(ctx, n, []*resourceapi.ResourceClaim{c})
			if err != nil && !isNodeFailure(err) {
				return nil, fmt.Errorf("allocate on %s: %w", n.Name, err)
			}
			if res == nil {
				break
			}
			for _, r := range res[0].Devices.Results {
				id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
				h := holder{claim: "what-if/" + c.Name, shareID: r.ShareID, consumed: r.ConsumedCapacity}
				st.holders[id] = append(st.holders[id], h)
				h.addTo(allocated, id)
			}
			count++
			rep.Fits++
		}
		if count > 0 {
			rep.PerNode = append(rep.PerNode, NodeCount{Node: n.Name, Count: count, WhatIf: whatIf[n.Name]})
		}
		if rep.Fits >= limit {
			rep.Capped = true
			break
		}
	}
	if usable == 0 {
		fix := "--add-nodes adds a pool to try"
		if len(nodeSelector) > 0 {
			fix = "check the node selector, or --add-nodes a pool it selects"
		}
		rep.NoDevices = fmt.Sprintf("no node the pod may use has devices (%d node(s), %d ResourceSlice(s)); %s", len(s.Nodes), len(s.Slices), fix)
	}
	return rep, nil
}

// requestClasses are the DeviceClasses a claim's requests and their
// alternatives name.
func requestClasses(spec resourceapi.ResourceClaimSpec) []string {
	var out []string
	for _, r := range spec.Devices.Requests {
		if r.Exactly != nil {
			out = append(out, r.Exactly.DeviceClassName)
		}
		for _, sr := range r.FirstAvailable {
			out = append(out, sr.DeviceClassName)
		}
	}
	return out
}

// AddFleet adds the nodes of a fleet file and their slices to the
// snapshot (what-if), returning the added node names. The new nodes run
// the driver, whose chart installs its DeviceClasses: those the cluster
// lacks by name are added too, and named in WhatIfClasses.
func (s *Snapshot) AddFleet(f *fleet.File, c *catalog.Catalog, driver string) (map[string]bool, error) {
	nodes, err := f.Nodes(c)
	if err != nil {
		return nil, err
	}
	added := map[string]bool{}
	for _, n := range nodes {
		for _, existing := range s.Nodes {
			if existing.Name == n.Name {
				return nil, fmt.Errorf("what-if node %s exists in the cluster already; rename the pool", n.Name)
			}
		}
		s.Nodes = append(s.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}})
		for _, rs := range n.Slices.ResourceSlices(driver, n.Name) {
			s.Slices = append(s.Slices, &rs)
		}
		added[n.Name] = true
	}
	have := map[string]bool{}
	for _, c := range s.Classes {
		have[c.Name] = true
	}
	for _, c := range classes.All(driver, classes.Options{}) {
		if !have[c.Name] {
			s.Classes = append(s.Classes, &c)
			s.WhatIfClasses = append(s.WhatIfClasses, c.Name)
		}
	}
	return added, nil
}
