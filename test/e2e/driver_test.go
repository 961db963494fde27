//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// AKS-style pools of NV6/NV12/NV18ads_A10_v5: one claim manifest with CEL
// on the memory capacity works across all pools and lands only on the 8
// and 12 GiB shares.
func TestDriverAzureVGPUPools(t *testing.T) {
	ctx := ctxFor(t)
	startFleet(ctx, t, `  features: {vgpu: true}
  nodePools:
  - {name: nv6, profile: azure-nv6ads-a10-v5, count: 2, labels: {e2e-case: aks}}
  - {name: nv12, profile: azure-nv12ads-a10-v5, count: 1, labels: {e2e-case: aks}}
  - {name: nv18, profile: azure-nv18ads-a10-v5, count: 1, labels: {e2e-case: aks}}
`)
	spec := exactly("vgpu.gpuplane.io", capacityAtLeast("memory", "8Gi")+` && `+attr("productName")+` == "NVIDIA A10"`, 1, nil)
	sel := map[string]string{"e2e-case": "aks"}
	pools := map[string]bool{}
	for _, n := range []string{"aks-0", "aks-1"} {
		claimPod(ctx, t, n, sel, spec)
		pool, dev, _ := deviceOf(mustRun(ctx, t, n))
		pools[pool] = true
		if dev != "vgpu-0" {
			t.Errorf("%s got device %s", n, dev)
		}
	}
	if !pools["nv12-0"] || !pools["nv18-0"] {
		t.Errorf("claims landed on %v, want the NV12 and NV18 nodes", pools)
	}
	claimPod(ctx, t, "aks-2", sel, spec)
	mustPend(ctx, t, "aks-2", "cannot allocate all claims")
	// The 4 GiB shares still serve a claim that fits them.
	claimPod(ctx, t, "aks-3", sel, exactly("vgpu.gpuplane.io", attr("vgpuFraction")+` == "1/6"`, 1, nil))
	if pool, _, _ := deviceOf(mustRun(ctx, t, "aks-3")); !strings.HasPrefix(pool, "nv6-") {
		t.Errorf("1/6 claim on %s", pool)
	}
}

// H100 with dynamic MIG: claims for >= 10Gi and >= 1/7 of the compute get
// partitions; beyond what the counters allow they stay Pending.
func TestDriverDynamicMIG(t *testing.T) {
	ctx := ctxFor(t)
	startFleet(ctx, t, `  nodePools:
  - {name: mig, profile: hgx-h100, count: 1, gpus: 1, features: {dynamicMIG: true}, labels: {e2e-case: mig}}
`)
	spec := exactly("mig.gpuplane.io", capacityAtLeast("memory", "10Gi")+" && "+capacityAtLeast("compute", "142m"), 1, nil)
	sel := map[string]string{"e2e-case": "mig"}
	used := map[int]string{}
	for i := range 4 {
		name := "mig-" + string(rune('a'+i))
		claimPod(ctx, t, name, sel, spec)
		_, dev, _ := deviceOf(mustRun(ctx, t, name))
		// gpu-0-mig-<profile>-<start>: the placements must not overlap.
		parts := strings.Split(dev, "-")
		start := parts[len(parts)-1]
		if prev, clash := used[int(start[0]-'0')]; clash {
			t.Errorf("%s and %s share placement %s", dev, prev, start)
		}
		used[int(start[0]-'0')] = dev
		if !strings.Contains(dev, "-mig-1g-20gb-") {
			t.Errorf("%s: want the smallest partition that fits, 1g.20gb", dev)
		}
	}
	claimPod(ctx, t, "mig-e", sel, spec)
	mustPend(ctx, t, "mig-e", "cannot allocate all claims")
	// A whole-GPU claim cannot take a GPU whose partitions are in use.
	claimPod(ctx, t, "mig-whole", sel, exactly("gpu.gpuplane.io", "", 1, nil))
	mustPend(ctx, t, "mig-whole", "cannot allocate all claims")
}

// Shared GPUs: 8Gi, 16Gi and 40Gi pack onto one 80 GB H100; 24Gi more goes
// to the next GPU; 79Gi fits nowhere and stays Pending.
func TestDriverSharedGPU(t *testing.T) {
	ctx := ctxFor(t)
	startFleet(ctx, t, `  nodePools:
  - {name: shared, profile: hgx-h100, count: 1, gpus: 2, features: {sharedGPUs: true}, labels: {e2e-case: shared}}
`)
	sel := map[string]string{"e2e-case": "shared"}
	want := []struct{ mem, dev string }{{"8Gi", "gpu-0"}, {"16Gi", "gpu-0"}, {"40Gi", "gpu-0"}, {"24Gi", "gpu-1"}}
	shares := map[string]bool{}
	for i, w := range want {
		name := "shared-" + string(rune('a'+i))
		claimPod(ctx, t, name, sel, exactly("gpu.gpuplane.io", "", 1, map[resourcev1.QualifiedName]string{"memory": w.mem}))
		a := mustRun(ctx, t, name)
		r := a.Devices.Results[0]
		if r.Device != w.dev || r.ShareID == nil || shares[string(*r.ShareID)] {
			t.Errorf("%s (%s): device %s share %v, want %s with a share of its own", name, w.mem, r.Device, r.ShareID, w.dev)
			continue
		}
		shares[string(*r.ShareID)] = true
		if got := r.ConsumedCapacity["memory"]; got.Cmp(mustQuantity(w.mem)) != 0 {
			t.Errorf("%s consumed %s memory, want %s", name, got.String(), w.mem)
		}
	}
	claimPod(ctx, t, "shared-e", sel, exactly("gpu.gpuplane.io", "", 1, map[resourcev1.QualifiedName]string{"memory": "79Gi"}))
	mustPend(ctx, t, "shared-e", "cannot allocate all claims")
}

// firstAvailable: prefer a whole H200, else a 3g partition, else a vGPU
// with >= 12 GiB. Pools appear one by one, from the least preferred.
func TestDriverFirstAvailable(t *testing.T) {
	ctx := ctxFor(t)
	spec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
		FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "h200", DeviceClassName: "gpu.gpuplane.io", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: attr("productName") + ` == "NVIDIA H200"`}}}},
			{Name: "mig3g", DeviceClassName: "mig.gpuplane.io", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: attr("profile") + ` == "3g.40gb"`}}}},
			{Name: "vgpu12", DeviceClassName: "vgpu.gpuplane.io", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: capacityAtLeast("memory", "12Gi")}}}},
		}}}}}
	sel := map[string]string{"e2e-case": "fallback"}
	steps := []struct{ pool, want string }{
		{"  - {name: fb-vgpu, profile: azure-nv18ads-a10-v5, count: 1, features: {vgpu: true}, labels: {e2e-case: fallback}}\n", "gpu/vgpu12"},
		{"  - {name: fb-mig, profile: hgx-h100, count: 1, gpus: 1, features: {dynamicMIG: true}, labels: {e2e-case: fallback}}\n", "gpu/mig3g"},
		{"  - {name: fb-h200, profile: hgx-h200, count: 1, gpus: 1, labels: {e2e-case: fallback}}\n", "gpu/h200"},
	}
	for i, s := range steps {
		startFleet(ctx, t, "  nodePools:\n"+s.pool)
		name := "fallback-" + string(rune('a'+i))
		claimPod(ctx, t, name, sel, spec)
		if _, dev, req := deviceOf(mustRun(ctx, t, name)); req != s.want {
			t.Errorf("step %d: %s got %s (%s), want subrequest %s", i, name, dev, req, s.want)
		}
	}
}

// GB200: a multi-GPU claim with matchAttribute on the NVLink clique gets
// GPUs of one clique; a tray with a GPU off the fabric cannot serve 4.
func TestDriverNVLinkClique(t *testing.T) {
	ctx := ctxFor(t)
	startFleet(ctx, t, `  features: {nvlinkDomains: true}
  nodePools:
  - {name: gb, profile: gb200-nvl72, count: 2, labels: {e2e-case: nvl}, nvlinkDown: {gb-0: [3]}}
`)
	sel := map[string]string{"e2e-case": "nvl"}
	clique := func(n int64) resourcev1.ResourceClaimSpec {
		s := exactly("gpu.gpuplane.io", "", n, nil)
		s.Devices.Constraints = []resourcev1.DeviceConstraint{{MatchAttribute: ptr.To(resourcev1.FullyQualifiedName(driver + "/nvlinkClique"))}}
		return s
	}
	claimPod(ctx, t, "nvl-4", sel, clique(4))
	a := mustRun(ctx, t, "nvl-4")
	if pool, _, _ := deviceOf(a); pool != "gb-1" || len(a.Devices.Results) != 4 {
		t.Errorf("4-GPU clique claim got %d devices on %s, want 4 on gb-1", len(a.Devices.Results), pool)
	}
	claimPod(ctx, t, "nvl-4b", sel, clique(4))
	mustPend(ctx, t, "nvl-4b", "cannot allocate all claims")
	claimPod(ctx, t, "nvl-3", sel, clique(3))
	a = mustRun(ctx, t, "nvl-3")
	for _, r := range a.Devices.Results {
		if r.Pool != "gb-0" || r.Device == "gpu-3" {
			t.Errorf("3-GPU clique claim got %s/%s; gpu-3 of gb-0 is off the fabric", r.Pool, r.Device)
		}
	}
}

// A DeviceTaintRule on one device moves new claims to the other node; when
// the rule goes, the waiting claim is served by the untainted device.
func TestDriverDeviceTaint(t *testing.T) {
	ctx := ctxFor(t)
	startFleet(ctx, t, `  features: {vgpu: true}
  nodePools:
  - {name: taint, profile: azure-nv36ads-a10-v5, count: 2, labels: {e2e-case: taint}}
`)
	rule, err := cluster.Client.ResourceV1().DeviceTaintRules().Create(ctx, &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "drain-taint-0"},
		Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To("taint-0"), Device: ptr.To("vgpu-0")},
			Taint:          resourcev1.DeviceTaint{Key: "example.com/maintenance", Value: "firmware", Effect: resourcev1.DeviceTaintEffectNoSchedule}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"e2e-case": "taint"}
	spec := exactly("vgpu.gpuplane.io", "", 1, nil)
	claimPod(ctx, t, "taint-a", sel, spec)
	if pool, _, _ := deviceOf(mustRun(ctx, t, "taint-a")); pool != "taint-1" {
		t.Errorf("claim landed on tainted %s", pool)
	}
	claimPod(ctx, t, "taint-b", sel, spec)
	mustPend(ctx, t, "taint-b", "cannot allocate all claims")
	if err := cluster.Client.ResourceV1().DeviceTaintRules().Delete(ctx, rule.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler retries the pending pod once the rule is gone.
	for {
		if a, _ := outcome(ctx, t, "taint-b"); a != nil {
			if pool, _, _ := deviceOf(a); pool != "taint-0" {
				t.Errorf("after the rule went, claim on %s", pool)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("pending claim not served after the taint rule was deleted")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Pods that ask for the extended resource gpuplane.io/gpu, not for a claim,
// are served by DRA through the gpu class's extendedResourceName.
func TestDriverExtendedResource(t *testing.T) {
	ctx := ctxFor(t)
	startFleet(ctx, t, `  nodePools:
  - {name: ext, profile: hgx-h100, count: 1, gpus: 2, labels: {e2e-case: ext}}
`)
	for i := range 3 {
		name := "ext-" + string(rune('a'+i))
		if _, err := cluster.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"e2e-case": "ext"},
				Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"gpuplane.io/gpu": mustQuantity("1")}}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running := 0
	for i := range 3 {
		name := "ext-" + string(rune('a'+i))
		for {
			p, err := cluster.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase == corev1.PodRunning {
				if p.Status.ExtendedResourceClaimStatus == nil {
					t.Errorf("%s runs without an extended-resource claim", name)
				}
				running++
				break
			}
			if unschedulable(*p) != "" {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s neither ran nor was unschedulable (scheduler log:\n%s)", name, cluster.LogTail("kube-scheduler", 10))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if running != 2 {
		t.Errorf("%d pods run on the node's 2 GPUs, want 2 (the third Pending)", running)
	}
}
