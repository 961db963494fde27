package explain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestVerdictMatchesAllocator: on random clusters (profiles, features,
// claims already placed, taint rules) and random claims, explain's
// per-device verdicts agree with Kubernetes' allocator on every node: a
// one-device request fits on a node exactly when explain finds a candidate
// there, and a larger request never fits where explain finds fewer
// candidates than it asks for.
func TestVerdictMatchesAllocator(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pools := []string{
		"{name: a, profile: azure-nv6ads-a10-v5, count: 1, features: {vgpu: true}}",
		"{name: b, profile: azure-nv12ads-a10-v5, count: 2, features: {vgpu: true}}",
		"{name: c, profile: hgx-h100, count: 1, gpus: 2, features: {dynamicMIG: true}}",
		"{name: d, profile: hgx-h100, count: 1, gpus: 2, features: {sharedGPUs: true}}",
		"{name: e, profile: hgx-h200, count: 1, gpus: 2}",
		"{name: f, profile: hgx-a100-80gb, count: 1, gpus: 1, migLayout: [3g.40gb, 2g.20gb, 1g.10gb]}",
	}
	queries := []struct{ class, expr string }{
		{"gpu.gpuplane.io", ""},
		{"gpu.gpuplane.io", mem("100Gi")},
		{"vgpu.gpuplane.io", mem("8Gi")},
		{"vgpu.gpuplane.io", `device.attributes["gpu.gpuplane.io"].vgpuFraction == "1/6"`},
		{"mig.gpuplane.io", mem("10Gi") + ` && device.capacity["gpu.gpuplane.io"].compute.compareTo(quantity("142m")) >= 0`},
		{"mig.gpuplane.io", `device.attributes["gpu.gpuplane.io"].profile == "3g.40gb"`},
		{"mig.gpuplane.io", `device.attributes["gpu.gpuplane.io"].computeSlices >= 2 && device.attributes["gpu.gpuplane.io"].memorySlices <= 2`},
		{"gpu.gpuplane.io", `device.attributes["gpu.gpuplane.io"].productName == "NVIDIA H200" || device.attributes["gpu.gpuplane.io"].index == 1`},
	}
	ctx := context.Background()
	checked, fitting := 0, 0
	for iter := range 30 {
		var chosen []string
		for _, p := range pools {
			if rng.IntN(3) > 0 {
				chosen = append(chosen, "  - "+p)
			}
		}
		if len(chosen) == 0 {
			chosen = append(chosen, "  - "+pools[rng.IntN(len(pools))])
		}
		s := snapshotOf(t, "  nodePools:\n"+strings.Join(chosen, "\n")+"\n")
		// Claims already placed.
		for i := range rng.IntN(12) {
			q := queries[rng.IntN(len(queries))]
			c := claimOf(fmt.Sprintf("pre-%d-%d", iter, i), q.class, q.expr, 1)
			if rng.IntN(2) == 0 {
				c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{
					Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(fmt.Sprintf("%dGi", 4+rng.IntN(40)))}}
			}
			place(t, s, c)
		}
		if rng.IntN(3) == 0 && len(s.Slices) > 0 {
			sl := s.Slices[rng.IntN(len(s.Slices))]
			if len(sl.Spec.Devices) > 0 {
				s.TaintRules = append(s.TaintRules, &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "r"},
					Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: ptr.To(sl.Spec.Pool.Name),
						Device: ptr.To(sl.Spec.Devices[0].Name)}, Taint: resourceapi.DeviceTaint{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}}})
			}
		}
		for j := range 6 {
			q := queries[rng.IntN(len(queries))]
			count := int64(1 + rng.IntN(3))
			c := claimOf(fmt.Sprintf("q-%d-%d", iter, j), q.class, q.expr, count)
			if rng.IntN(3) == 0 {
				c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{
					Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(fmt.Sprintf("%dGi", 4+rng.IntN(60)))}}
			}
			s.Claims = append(s.Claims, c)
			rep, err := ExplainClaim(ctx, s, "default", c.Name)
			if err != nil {
				t.Fatal(err)
			}
			s.Claims = s.Claims[:len(s.Claims)-1]
			fit := map[string]bool{}
			for _, n := range rep.FitsOn {
				fit[n] = true
			}
			for _, n := range rep.Requests[0].Nodes {
				checked++
				if fit[n.Node] {
					fitting++
				}
				switch {
				case fit[n.Node] && int64(n.Candidates) < count:
					t.Fatalf("iter %d %s (count %d, %s): allocator fits on %s, explain finds %d candidates:\n%s",
						iter, c.Name, count, q.expr, n.Node, n.Candidates, strings.Join(verdicts(rep), "\n"))
				case count == 1 && !fit[n.Node] && n.Candidates > 0:
					t.Fatalf("iter %d %s (%s): explain finds %d candidates on %s, the allocator none:\n%s",
						iter, c.Name, q.expr, n.Candidates, n.Node, strings.Join(verdicts(rep), "\n"))
				}
			}
		}
	}
	if checked < 200 || fitting == 0 || fitting == checked {
		t.Errorf("weak sample: %d node verdicts, %d fitting", checked, fitting)
	}
	t.Logf("%d node verdicts checked, %d fitting", checked, fitting)
}
