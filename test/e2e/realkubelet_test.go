//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuplane/gpuplane/internal/testcluster"
)

// TestRealKubelet runs the DRA driver under a real kubelet (cmd/kubelet of
// the same Kubernetes release) whose containers run as records in the
// project's CRI runtime: the kubelet registers the plugin through its
// registration socket, calls NodePrepareResources before it creates a
// container, hands the CDI device names to the runtime and calls
// NodeUnprepareResources when the pod goes. The node's device layout is
// changed between cases as an operator would change MIG mode: the driver
// restarts with other flags once the node's pods are gone.
func TestRealKubelet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ensureClasses(ctx, t)
	k, err := cluster.StartKubelet(ctx, testcluster.KubeletOptions{Name: "real-0", Taints: []corev1.Taint{realNodeTaint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.Stop()
		_ = cluster.Client.CoreV1().Nodes().Delete(context.Background(), k.Name, metav1.DeleteOptions{})
	})
	dir := t.TempDir()
	d := &driverProc{bin: buildDriver(t), dir: dir, k: k, log: filepath.Join(cluster.Dir, "logs", "dra-driver-real-0.log")}
	t.Cleanup(func() {
		d.stop(t)
		if t.Failed() {
			t.Logf("driver log:\n%s\nkubelet log:\n%s", d.logTail(), k.LogTail(30))
		}
	})

	t.Run("SlicesOfTheRealNode", func(t *testing.T) { realNodeSlices(ctx, t, d) })
	t.Run("WholeAndDynamicMIG", func(t *testing.T) { wholeAndDynamicMIG(ctx, t, d) })
	t.Run("StaticMIG", func(t *testing.T) {
		d.stop(t)
		d.start(t, "--profile=hgx-h100", "--mig-layout=3g.40gb,3g.40gb")
		waitDevices(ctx, t, k.Name, "static MIG", allOfType("mig"))
		nodePod(ctx, t, k.Name, "rk-static", exactly("mig.gpuplane.io", attr("profile")+` == "3g.40gb"`, 1, nil))
		waitRunning(ctx, t, k, "rk-static")
		checkCDI(ctx, t, d, k, "rk-static")
		deletePods(ctx, t, k, "rk-static")
		waitUnprepared(ctx, t, d)
	})
	t.Run("SharedGPU", func(t *testing.T) {
		d.stop(t)
		d.start(t, "--profile=hgx-h100", "--shared-gpus")
		waitDevices(ctx, t, k.Name, "shared", func(devs []resourcev1.Device) bool {
			for _, dv := range devs {
				if dv.AllowMultipleAllocations == nil || !*dv.AllowMultipleAllocations {
					return false
				}
			}
			return true
		})
		// Two pods on one GPU: 30Gi and 40Gi of one 80 GB H100's memory.
		first := ""
		for i, mem := range []string{"30Gi", "40Gi"} {
			name := fmt.Sprintf("rk-shared-%d", i)
			expr := ""
			if first != "" {
				expr = attr("uuid") + ` == "` + first + `"`
			}
			nodePod(ctx, t, k.Name, name, exactly("gpu.gpuplane.io", expr, 1, map[resourcev1.QualifiedName]string{"memory": mem}))
			waitRunning(ctx, t, k, name)
			uuids := checkCDI(ctx, t, d, k, name)
			if first == "" {
				first = uuids[0]
			} else if uuids[0] != first {
				t.Errorf("second shared pod on %s, want %s", uuids[0], first)
			}
			// The kubelet passed the devices by name; the runtime applies the
			// spec's edits, which carry the MPS memory cap.
			if spec := cdiSpecOf(t, d, name); !strings.Contains(spec, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=") {
				t.Errorf("shared pod %s: CDI spec lacks the MPS memory limit:\n%s", name, spec)
			}
		}
		deletePods(ctx, t, k, "rk-shared-0", "rk-shared-1")
		waitUnprepared(ctx, t, d)
	})
	t.Run("VGPU", func(t *testing.T) {
		d.stop(t)
		d.start(t, "--profile=azure-nv12ads-a10-v5")
		waitDevices(ctx, t, k.Name, "vGPU", allOfType("vgpu"))
		nodePod(ctx, t, k.Name, "rk-vgpu", exactly("vgpu.gpuplane.io", "", 1, nil))
		waitRunning(ctx, t, k, "rk-vgpu")
		checkCDI(ctx, t, d, k, "rk-vgpu")
		deletePods(ctx, t, k, "rk-vgpu")
		waitUnprepared(ctx, t, d)
	})
}

// realNodeSlices: the driver's ResourceSlices belong to the node object
// the real kubelet registered (owner reference with its UID).
func realNodeSlices(ctx context.Context, t *testing.T, d *driverProc) {
	d.start(t, "--profile=hgx-h100", "--dynamic-mig")
	node, err := d.k.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rt := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rt, "gpuplane-recordcri://") {
		t.Errorf("node runtime %q: not registered by the real kubelet", rt)
	}
	if _, kwok := node.Annotations["kwok.x-k8s.io/node"]; kwok {
		t.Error("the real kubelet's node carries kwok's annotation")
	}
	waitDevices(ctx, t, node.Name, "dynamic MIG", dynamicLayout)
	list, err := cluster.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Node" || s.OwnerReferences[0].UID != node.UID {
			t.Errorf("slice %s owners %+v, want the node %s (%s)", s.Name, s.OwnerReferences, node.Name, node.UID)
		}
		if s.Spec.Driver != driver || s.Spec.Pool.Name != node.Name {
			t.Errorf("slice %s: driver %s pool %s", s.Name, s.Spec.Driver, s.Spec.Pool.Name)
		}
	}
}

// dynamicLayout: whole GPUs and MIG placements that share the GPUs' counters.
func dynamicLayout(devs []resourcev1.Device) bool {
	kinds := map[string]bool{}
	for _, d := range devs {
		if len(d.ConsumesCounters) == 0 {
			return false
		}
		kinds[devType(d)] = true
	}
	return kinds["gpu"] && kinds["mig"] && len(kinds) == 2
}

// wholeAndDynamicMIG: a whole GPU and a dynamic MIG partition; then
// restarts of the kubelet and of the driver with both prepared, a health
// event that a new pod's allocation avoids, and the unprepare on delete.
func wholeAndDynamicMIG(ctx context.Context, t *testing.T, d *driverProc) {
	k := d.k
	nodePod(ctx, t, k.Name, "rk-whole", exactly("gpu.gpuplane.io", "", 1, nil))
	nodePod(ctx, t, k.Name, "rk-dyn", exactly("mig.gpuplane.io", attr("profile")+` == "1g.10gb"`, 1, nil))
	waitRunning(ctx, t, k, "rk-whole")
	waitRunning(ctx, t, k, "rk-dyn")
	whole := checkCDI(ctx, t, d, k, "rk-whole")
	dyn := checkCDI(ctx, t, d, k, "rk-dyn")
	if !strings.HasPrefix(dyn[0], "MIG-") || strings.HasPrefix(whole[0], "MIG-") {
		t.Errorf("whole GPU sees %v, dynamic partition %v", whole, dyn)
	}
	parts := d.partitions(t)
	if len(parts) != 1 || parts[0].Profile != "1g.10gb" {
		t.Fatalf("partitions %+v, want one 1g.10gb", parts)
	}
	before := preparedState(t, d, "rk-whole", "rk-dyn")

	// The kubelet restarts with both claims prepared: its pods keep their
	// containers, and nothing is prepared a second time.
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	oneMorePod(ctx, t, d, "rk-after-kubelet")
	if after := preparedState(t, d, "rk-whole", "rk-dyn"); after != before {
		t.Errorf("after the kubelet's restart:\n%s\nwant\n%s", after, before)
	}

	// The driver restarts with both prepared: it answers from its
	// checkpoint, and its partitions are the ones it had.
	d.stop(t)
	d.start(t, "--profile=hgx-h100", "--dynamic-mig")
	oneMorePod(ctx, t, d, "rk-after-driver")
	if after := preparedState(t, d, "rk-whole", "rk-dyn"); after != before {
		t.Errorf("after the driver's restart:\n%s\nwant\n%s", after, before)
	}

	// Health: a free GPU turns unhealthy; a pod that may take it or
	// another free one gets the healthy one.
	devs := waitDevices(ctx, t, k.Name, "dynamic MIG", dynamicLayout)
	var free []string
	for _, dv := range devs {
		u := devUUID(dv)
		if devType(dv) == "gpu" && u != whole[0] && u != parts[0].GPU {
			free = append(free, u)
		}
	}
	slices.Sort(free)
	if len(free) < 2 {
		t.Fatalf("free GPUs %v", free)
	}
	sick, well := free[0], free[1]
	appendHealth(t, d, fmt.Sprintf(`{"uuid": %q, "healthy": false, "reason": "XID 79"}`, sick))
	waitDevices(ctx, t, k.Name, "tainted", func(devs []resourcev1.Device) bool { return taintedGPU(devs, sick) })
	nodePod(ctx, t, k.Name, "rk-avoid", exactly("gpu.gpuplane.io", fmt.Sprintf("%s in [%q, %q]", attr("uuid"), sick, well), 1, nil))
	waitRunning(ctx, t, k, "rk-avoid")
	if got := checkCDI(ctx, t, d, k, "rk-avoid"); got[0] != well {
		t.Errorf("pod got GPU %s, want the healthy %s (tainted %s)", got[0], well, sick)
	}
	appendHealth(t, d, fmt.Sprintf(`{"uuid": %q, "healthy": true}`, sick))
	waitDevices(ctx, t, k.Name, "untainted", func(devs []resourcev1.Device) bool { return !taintedGPU(devs, sick) })

	// Deleting the pods unprepares: partitions destroyed, checkpoint and CDI specs gone.
	deletePods(ctx, t, k, "rk-whole", "rk-dyn", "rk-avoid")
	waitUnprepared(ctx, t, d)
	// The kubelet removes a deleted pod's containers from the runtime after
	// the API object is gone (its pod cleanup runs on its own schedule).
	waitFor(ctx, t, "the deleted pods' containers removed from the runtime", func() bool {
		for _, c := range k.Runtime.Records().Containers {
			if slices.Contains([]string{"rk-whole", "rk-dyn", "rk-avoid"}, c.Pod) && !c.Removed {
				return false
			}
		}
		return true
	})
}

// oneMorePod runs and deletes a pod with a dynamic partition: the kubelet
// and the driver talk again after a restart.
func oneMorePod(ctx context.Context, t *testing.T, d *driverProc, name string) {
	t.Helper()
	nodePod(ctx, t, d.k.Name, name, exactly("mig.gpuplane.io", attr("profile")+` == "1g.10gb"`, 1, nil))
	waitRunning(ctx, t, d.k, name)
	checkCDI(ctx, t, d, d.k, name)
	if n := len(d.partitions(t)); n != 2 {
		t.Errorf("%d partitions with %s running, want 2", n, name)
	}
	deletePods(ctx, t, d.k, name)
	waitFor(ctx, t, "the partition of "+name+" destroyed", func() bool { return len(d.partitions(t)) == 1 })
}

// preparedState is what must not change across restarts: the claims'
// prepared devices, the partitions, the CDI spec files and the pods'
// containers (same IDs, still running, none added).
func preparedState(t *testing.T, d *driverProc, pods ...string) string {
	t.Helper()
	var b strings.Builder
	ck := d.checkpoint(t)
	uids := make([]string, 0, len(ck))
	for uid := range ck {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		for _, dev := range ck[uid].Devices {
			fmt.Fprintf(&b, "claim %s/%s: %s %s %s\n", ck[uid].Namespace, ck[uid].Name, dev.Device, dev.UUID, dev.CDIDeviceID)
		}
	}
	fmt.Fprintf(&b, "partitions %+v\n", d.partitions(t))
	specs, _ := filepath.Glob(filepath.Join(d.cdiDir(), "*"))
	fmt.Fprintf(&b, "CDI specs %d\n", len(specs))
	for _, p := range pods {
		for _, c := range d.k.Runtime.Records().ContainersOf("default", p) {
			fmt.Fprintf(&b, "container %s of %s: %s removed=%v\n", c.ID[:12], p, c.State, c.Removed)
		}
	}
	return b.String()
}

func waitUnprepared(ctx context.Context, t *testing.T, d *driverProc) {
	t.Helper()
	waitFor(ctx, t, "every claim unprepared", func() bool {
		specs, _ := filepath.Glob(filepath.Join(d.cdiDir(), "*"))
		return len(d.checkpoint(t)) == 0 && len(d.partitions(t)) == 0 && len(specs) == 0
	})
}

func waitFor(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func appendHealth(t *testing.T, d *driverProc, line string) {
	t.Helper()
	f, err := os.OpenFile(d.healthEvents(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// taintedGPU says whether the whole-GPU device with uuid carries a taint.
func taintedGPU(devs []resourcev1.Device, uuid string) bool {
	for _, d := range devs {
		if devType(d) == "gpu" && devUUID(d) == uuid {
			return len(d.Taints) > 0
		}
	}
	return false
}

// cdiSpecOf returns the driver's CDI spec file for a pod's claim.
func cdiSpecOf(t *testing.T, d *driverProc, claim string) string {
	t.Helper()
	c, err := cluster.Client.ResourceV1().ResourceClaims("default").Get(context.Background(), claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(d.cdiDir(), "*"+string(c.UID)+"*"))
	if len(files) != 1 {
		t.Fatalf("CDI spec files for %s: %v", claim, files)
	}
	b, _ := os.ReadFile(files[0])
	return string(b)
}
