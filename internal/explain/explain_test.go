package explain

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
)

const drv = "gpu.gpuplane.io"

// snapshotOf builds a cluster from fleet node pools, with the driver's classes.
func snapshotOf(t testing.TB, pools string) *Snapshot {
	t.Helper()
	f, err := fleet.Parse([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n" + pools))
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{}
	if _, err := s.AddFleet(f, catalog.MustDefault(), drv); err != nil {
		t.Fatal(err) // the nodes, their slices and the driver's classes
	}
	return s
}

func claimOf(name, class, expr string, count int64) *resourceapi.ResourceClaim {
	r := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	if expr != "" {
		r.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}
	}
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: r}}}}}
}

// place allocates c on the first node where it fits, as the scheduler
// would, and records it in the snapshot; false if it fits nowhere.
func place(t testing.TB, s *Snapshot, c *resourceapi.ResourceClaim) bool {
	t.Helper()
	st := newState(s, nil)
	fits, err := st.allocate(context.Background(), []*resourceapi.ResourceClaim{c}, st.nodesSorted())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.nodesSorted() {
		if res, ok := fits[n.Name]; ok {
			c.Status.Allocation = &res[0]
			s.Claims = append(s.Claims, c)
			return true
		}
	}
	s.Claims = append(s.Claims, c)
	return false
}

func mem(q string) string {
	return fmt.Sprintf(`device.capacity[%q].memory.compareTo(quantity(%q)) >= 0`, drv, q)
}

func hasLine(lines []string, parts ...string) bool {
	for _, l := range lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func verdicts(rep *Report) []string {
	var out []string
	for _, rr := range rep.Requests {
		for _, n := range rr.Nodes {
			for _, v := range n.Devices {
				out = append(out, v.Device+" "+v.Kind+" "+v.Reason)
			}
		}
	}
	return out
}

func TestExplainVGPUPools(t *testing.T) {
	s := snapshotOf(t, `  features: {vgpu: true}
  nodePools:
  - {name: nv6, profile: azure-nv6ads-a10-v5, count: 1}
  - {name: nv12, profile: azure-nv12ads-a10-v5, count: 1}
`)
	ctx := context.Background()
	if !place(t, s, claimOf("first", "vgpu.gpuplane.io", mem("8Gi"), 1)) {
		t.Fatal("first claim did not fit")
	}
	place(t, s, claimOf("second", "vgpu.gpuplane.io", mem("8Gi")+` && device.attributes["gpu.gpuplane.io"].productName == "NVIDIA A10"`, 1))
	rep, err := ExplainClaim(ctx, s, "default", "second")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Allocatable {
		t.Fatalf("second claim explained as allocatable on %v", rep.FitsOn)
	}
	v := verdicts(rep)
	if !hasLine(v, "nv6-0/vgpu-0 selector", "memory=4Gi", `quantity("8Gi")`) {
		t.Errorf("nv6 device not explained by its memory:\n%s", strings.Join(v, "\n"))
	}
	if !hasLine(v, "nv12-0/vgpu-0 in-use", "default/first") {
		t.Errorf("nv12 device not explained as held by the first claim:\n%s", strings.Join(v, "\n"))
	}
	if !hasLine(rep.Fixes, "relax", `quantity("8Gi")`, "1 otherwise free") || !hasLine(rep.Fixes, "allocated", "default/first") {
		t.Errorf("fixes:\n%s", strings.Join(rep.Fixes, "\n"))
	}
	// The first claim, explained as if free again, fits on nv12 only.
	rep, _ = ExplainClaim(ctx, s, "default", "first")
	if !rep.Allocatable || strings.Join(rep.FitsOn, ",") != "nv12-0" || rep.Note == "" {
		t.Errorf("first claim: allocatable=%v on %v note %q", rep.Allocatable, rep.FitsOn, rep.Note)
	}
}

func TestExplainMIGCounters(t *testing.T) {
	s := snapshotOf(t, `  nodePools:
  - {name: mig, profile: hgx-h100, count: 1, gpus: 1, features: {dynamicMIG: true}}
`)
	sel := mem("10Gi") + fmt.Sprintf(` && device.capacity[%q].compute.compareTo(quantity("142m")) >= 0`, drv)
	for i := range 4 {
		if !place(t, s, claimOf(fmt.Sprint("m", i), "mig.gpuplane.io", sel, 1)) {
			t.Fatalf("claim %d did not fit", i)
		}
	}
	place(t, s, claimOf("m4", "mig.gpuplane.io", sel, 1))
	rep, err := ExplainClaim(context.Background(), s, "default", "m4")
	if err != nil {
		t.Fatal(err)
	}
	v := verdicts(rep)
	if rep.Allocatable || !hasLine(v, "gpu-0-mig-2g-20gb-0 counter", "memory-slice-", "used up by default/m") ||
		!hasLine(v, "gpu-0-mig-1g-10gb-0 selector", "memory=9984Mi") {
		t.Errorf("allocatable=%v\n%s", rep.Allocatable, strings.Join(v, "\n"))
	}
	if !hasLine(rep.Fixes, "blocked by partitions already in use") {
		t.Errorf("fixes:\n%s", strings.Join(rep.Fixes, "\n"))
	}
}

func TestExplainCountAndConstraint(t *testing.T) {
	s := snapshotOf(t, `  features: {nvlinkDomains: true}
  nodePools:
  - {name: gb, profile: gb200-nvl72, count: 1, nvlinkDown: {gb-0: [3]}}
`)
	big := claimOf("eight", "gpu.gpuplane.io", "", 8)
	place(t, s, big)
	rep, _ := ExplainClaim(context.Background(), s, "default", "eight")
	if rep.Allocatable || !hasLine(rep.Fixes, "lower count from 8 to 4", "gb-0") {
		t.Errorf("fixes:\n%s", strings.Join(rep.Fixes, "\n"))
	}
	clique := claimOf("clique", "gpu.gpuplane.io", "", 4)
	attr := resourceapi.FullyQualifiedName(drv + "/nvlinkClique")
	clique.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &attr}}
	place(t, s, clique)
	rep, _ = ExplainClaim(context.Background(), s, "default", "clique")
	if rep.Allocatable || !hasLine(rep.Constraints, "gb-0", "matchAttribute", "<none> x1", "x3") {
		t.Errorf("allocatable=%v constraints:\n%s", rep.Allocatable, strings.Join(rep.Constraints, "\n"))
	}
}

func TestCapacity(t *testing.T) {
	cases := []struct {
		pools string
		spec  *resourceapi.ResourceClaim
		want  int
	}{
		{"  nodePools:\n  - {name: mig, profile: hgx-h100, count: 2, gpus: 1, features: {dynamicMIG: true}}\n",
			claimOf("t", "mig.gpuplane.io", mem("10Gi"), 1), 8},
		{"  nodePools:\n  - {name: mig, profile: hgx-h100, count: 1, gpus: 1, features: {dynamicMIG: true}}\n",
			claimOf("t", "mig.gpuplane.io", `device.attributes["gpu.gpuplane.io"].profile == "1g.10gb"`, 1), 7},
		{"  nodePools:\n  - {name: whole, profile: hgx-h200, count: 3}\n", claimOf("t", "gpu.gpuplane.io", "", 2), 12},
	}
	for i, tc := range cases {
		s := snapshotOf(t, tc.pools)
		rep, err := Capacity(context.Background(), s, "t", tc.spec.Spec, nil, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Fits != tc.want {
			t.Errorf("case %d: %d fit, want %d (%+v)", i, rep.Fits, tc.want, rep.PerNode)
		}
	}
	// Shared GPUs: 8Gi shares of 79Gi GPUs, 9 per GPU; what-if nodes add theirs.
	s := snapshotOf(t, "  nodePools:\n  - {name: shared, profile: hgx-h100, count: 1, gpus: 2, features: {sharedGPUs: true}}\n")
	spec := claimOf("t", "gpu.gpuplane.io", "", 1).Spec
	spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("8Gi")}}
	rep, _ := Capacity(context.Background(), s, "t", spec, nil, 1000, nil)
	if rep.Fits != 18 {
		t.Errorf("shared: %d fit, want 18", rep.Fits)
	}
	f, _ := fleet.Parse([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n  nodePools:\n  - {name: more, profile: hgx-h100, count: 1, gpus: 1, features: {sharedGPUs: true}}\n"))
	added, err := s.AddFleet(f, catalog.MustDefault(), drv)
	if err != nil {
		t.Fatal(err)
	}
	rep, _ = Capacity(context.Background(), s, "t", spec, nil, 1000, added)
	if rep.Fits != 27 || !rep.PerNode[0].WhatIf {
		t.Errorf("what-if: %d fit (%+v), want 27 with the new node marked", rep.Fits, rep.PerNode)
	}
}

// What-if nodes bring their driver's classes where the cluster has none
// of their names, and say so; a class the cluster has is kept as it is.
func TestWhatIfNodesBringTheirClasses(t *testing.T) {
	f, err := fleet.Parse([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n  nodePools:\n  - {name: h, profile: hgx-h200, count: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{}
	added, err := s.AddFleet(f, catalog.MustDefault(), drv)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Capacity(context.Background(), s, "t", claimOf("t", "gpu.gpuplane.io", "", 1).Spec, nil, 100, added)
	if err != nil || rep.Fits != 8 || strings.Join(rep.WhatIfClasses, ",") != "gpu.gpuplane.io,mig.gpuplane.io,vgpu.gpuplane.io" {
		t.Errorf("an empty cluster plus 8 H200s: %+v, %v", rep, err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "what-if DeviceClasses") {
		t.Errorf("text: %q %v", b.String(), err)
	}
	own := classes.All(drv, classes.Options{})[0]
	own.Spec.Selectors = nil // the cluster's own, whatever it selects
	s = &Snapshot{Classes: []*resourceapi.DeviceClass{&own}}
	if _, err := s.AddFleet(f, catalog.MustDefault(), drv); err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.WhatIfClasses, ",") != "mig.gpuplane.io,vgpu.gpuplane.io" || len(s.Classes) != 3 || s.Classes[0] != &own {
		t.Errorf("a cluster with gpu.gpuplane.io: added %v, classes %d", s.WhatIfClasses, len(s.Classes))
	}
}

// A class that is not there is named with the classes that are and where
// gpuplane's come from.
func TestCapacityNamesAMissingClass(t *testing.T) {
	s := snapshotOf(t, "  nodePools:\n  - {name: whole, profile: hgx-h200, count: 1}\n")
	_, err := Capacity(context.Background(), s, "t", claimOf("t", "gpu.example.com", "", 1).Spec, nil, 10, nil)
	if err == nil || !strings.Contains(err.Error(), `deviceclass "gpu.example.com" not found (known: gpu.gpuplane.io, `) || !strings.Contains(err.Error(), "gpuplane dra-driver classes") {
		t.Errorf("got %v", err)
	}
}

// With no node to try, a missing class is still named, and a claim of a
// class that exists says that no node has devices instead of a bare 0.
func TestCapacityOnAnEmptyCluster(t *testing.T) {
	s := snapshotOf(t, "  nodePools:\n  - {name: whole, profile: hgx-h200, count: 1}\n")
	s.Nodes, s.Slices = nil, nil
	if _, err := Capacity(context.Background(), s, "t", claimOf("t", "gpu.example.com", "", 1).Spec, nil, 10, nil); err == nil || !strings.Contains(err.Error(), `deviceclass "gpu.example.com" not found`) {
		t.Errorf("missing class on an empty cluster: %v", err)
	}
	rep, err := Capacity(context.Background(), s, "t", claimOf("t", "gpu.gpuplane.io", "", 1).Spec, nil, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if rep.Fits != 0 || !strings.Contains(b.String(), "no node the pod may use has devices (0 node(s), 0 ResourceSlice(s))") {
		t.Errorf("report %+v:\n%s", rep, b.String())
	}
}

func TestTextSumsUpManyNodes(t *testing.T) {
	s := snapshotOf(t, "  nodePools:\n  - {name: h, profile: hgx-h100, count: 20, gpus: 1}\n")
	place(t, s, claimOf("big", "gpu.gpuplane.io", "", 2))
	rep, err := ExplainClaim(context.Background(), s, "default", "big")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "devices are candidates") != maxNodesShown || !strings.Contains(b.String(), "12 more node(s)") {
		t.Errorf("text report:\n%s", b.String())
	}
}
