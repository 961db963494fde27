package devicepool

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
)

const driver = "gpu.gpuplane.io"

func snapshot(t testing.TB, fleetYAML string) Snapshot {
	t.Helper()
	f, err := fleet.Parse([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n" + fleetYAML))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := f.Nodes(catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	s := Snapshot{NodeLabels: map[string]map[string]string{}}
	for _, n := range nodes {
		s.Slices = append(s.Slices, n.Slices.ResourceSlices(driver, n.Name)...)
		s.NodeLabels[n.Name] = n.Labels
	}
	s.Classes = classes.All(driver, classes.Options{})
	return s
}

var allClasses = Filter{Classes: []string{"gpu.gpuplane.io", "mig.gpuplane.io", "vgpu.gpuplane.io"}}

func kinds(p *Pool) map[string]Kind {
	out := map[string]Kind{}
	for _, k := range p.Kinds {
		out[k.Device] = k
	}
	return out
}

func claim(name string, owner types.UID, results ...resourcev1.DeviceRequestAllocationResult) resourcev1.ResourceClaim {
	return resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{UID: owner}}},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: results}}}}
}

func TestWholeGPUsFreeAndAllocated(t *testing.T) {
	s := snapshot(t, "  nodePools:\n  - {name: h, profile: hgx-h100, count: 2}\n")
	p, err := Build(context.Background(), catalog.MustDefault(), s, allClasses)
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(p)["h100_sxm"]
	if k.Free != 16 || k.PerNode != 8 || k.Nodes != 2 || p.GPUs != 16 {
		t.Fatalf("pool %s: want 16 x h100_sxm, 8 a node on 2 nodes, 16 GPUs", p)
	}
	// Three devices of the first node held by someone else, one by our own pod.
	sl := s.Slices[0]
	res := func(i int) resourcev1.DeviceRequestAllocationResult {
		return resourcev1.DeviceRequestAllocationResult{Driver: driver, Pool: sl.Spec.Pool.Name, Device: sl.Spec.Devices[i].Name}
	}
	s.Claims = []resourcev1.ResourceClaim{claim("a", "other", res(0), res(1)), claim("b", "other2", res(2)), claim("c", "ours", res(3))}
	s.Mine = map[types.UID]bool{"ours": true}
	p, err = Build(context.Background(), catalog.MustDefault(), s, allClasses)
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(p)["h100_sxm"]; k.Free != 13 || k.PerNode != 8 {
		t.Fatalf("pool %s: want 13 free (3 held by others; our own pod's counts as free), 8 on the emptier node", p)
	}
}

func TestSelectorAndClassesFilter(t *testing.T) {
	s := snapshot(t, "  nodePools:\n  - {name: h, profile: hgx-h100, count: 1}\n  - {name: a, profile: azure-nv18ads-a10-v5, count: 2}\n  - {name: v, profile: azure-nv18ads-a10-v5, count: 1, features: {vgpu: true}}\n")
	p, err := Build(context.Background(), catalog.MustDefault(), s, Filter{Classes: allClasses.Classes,
		Selector: `device.attributes["gpu.gpuplane.io"].productName != "NVIDIA H100 80GB HBM3"`})
	if err != nil {
		t.Fatal(err)
	}
	ks := kinds(p)
	if _, ok := ks["h100_sxm"]; ok || len(ks) != 1 {
		t.Fatalf("pool %s: the selector excludes the H100s; want only the A10 share", p)
	}
	for name, k := range ks {
		if !strings.HasPrefix(name, "a10:") || k.Free != 3 {
			t.Fatalf("pool %s: want 3 A10 vGPU shares, 2 of them told by their memory", p)
		}
	}
	if _, err := Build(context.Background(), catalog.MustDefault(), s, Filter{Classes: []string{"gpu.nvidia.com"}}); err == nil || !strings.Contains(err.Error(), `"gpu.nvidia.com" does not exist`) {
		t.Fatalf("unknown class: %v", err)
	}
	if _, err := Build(context.Background(), catalog.MustDefault(), s, Filter{Classes: allClasses.Classes, Selector: "device.attributes["}); err == nil || !strings.Contains(err.Error(), "devices.selector") {
		t.Fatalf("bad CEL: %v", err)
	}
}

func TestDynamicMIGCountsPlacementsOnce(t *testing.T) {
	s := snapshot(t, "  features: {dynamicMIG: true}\n  nodePools:\n  - {name: h, profile: hgx-h100, count: 1, gpus: 2}\n")
	p, err := Build(context.Background(), catalog.MustDefault(), s, allClasses)
	if err != nil {
		t.Fatal(err)
	}
	ks := kinds(p)
	if ks["h100_sxm"].Free != 2 || ks["h100_sxm:1g.10gb"].Free != 14 || ks["h100_sxm:7g.80gb"].Free != 2 || p.GPUs != 2 {
		t.Fatalf("pool %s: want 2 whole, 14 1g.10gb (7 a GPU), 2 7g.80gb on 2 GPUs", p)
	}
	// A claim holding one 1g.10gb placement on GPU 0 rules out the whole GPU 0.
	var dev resourcev1.Device
	var pool string
	for _, sl := range s.Slices {
		for _, d := range sl.Spec.Devices {
			if len(d.ConsumesCounters) > 0 && strings.Contains(d.Name, "1g-10gb") && dev.Name == "" {
				dev, pool = d, sl.Spec.Pool.Name
			}
		}
	}
	if dev.Name == "" {
		t.Fatal("no 1g.10gb placement published")
	}
	s.Claims = []resourcev1.ResourceClaim{claim("x", "other", resourcev1.DeviceRequestAllocationResult{Driver: driver, Pool: pool, Device: dev.Name})}
	p, err = Build(context.Background(), catalog.MustDefault(), s, allClasses)
	if err != nil {
		t.Fatal(err)
	}
	if ks := kinds(p); ks["h100_sxm"].Free != 1 || ks["h100_sxm:1g.10gb"].Free != 13 {
		t.Fatalf("pool %s: after one 1g.10gb is taken want 1 whole GPU and 13 1g.10gb", p)
	}
}

// A node selector keeps only the devices of the nodes the pods may use.
func TestNodeSelector(t *testing.T) {
	s := snapshot(t, "  nodePools:\n  - {name: h, profile: hgx-h100, count: 2, labels: {team: a}}\n  - {name: g, profile: hgx-h200, count: 1, labels: {team: b}}\n")
	f := allClasses
	f.NodeSelector = map[string]string{"team": "b"}
	p, err := Build(context.Background(), catalog.MustDefault(), s, f)
	if err != nil {
		t.Fatal(err)
	}
	if ks := kinds(p); len(ks) != 1 || ks["h200_sxm"].Free != 8 || p.GPUs != 8 {
		t.Fatalf("pool %s: want only team b's 8 H200s", p)
	}
}

// A node that publishes more devices than configure accepts per node still
// gives a pool configure takes, bounded at its ceiling.
func TestEntriesBoundDevicesPerNode(t *testing.T) {
	p := Pool{Kinds: []Kind{{Device: "h100_sxm:1/2", Free: 5000, PerNode: 5000, Nodes: 1}, {Device: "h100_sxm", Free: 8, PerNode: 8, Nodes: 1}}}
	e := p.Entries()
	if len(e) != 2 || e[0].GPUsPerNode != configure.MaxGPUsPerNode || e[1].GPUsPerNode != 8 {
		t.Errorf("entries %+v, want devices per node bounded at %d and 8 kept", e, configure.MaxGPUsPerNode)
	}
}
