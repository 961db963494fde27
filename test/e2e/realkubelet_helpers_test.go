//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/recordcri"
	"github.com/gpuplane/gpuplane/internal/testcluster"
)

// realNodeTaint keeps the other tests' pods off the real kubelet's node.
var realNodeTaint = corev1.Taint{Key: "gpuplane.io/real-kubelet", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// driverProc is gpuplane-dra-driver running as its own process on the
// real kubelet's node, as the DaemonSet's container would.
type driverProc struct {
	bin, dir string
	k        *testcluster.Kubelet
	cmd      *exec.Cmd
	done     chan error
	log      string
}

func (d *driverProc) pluginDir() string    { return filepath.Join(d.k.PluginsDir, plugin.DriverName) }
func (d *driverProc) cdiDir() string       { return filepath.Join(d.dir, "cdi") }
func (d *driverProc) healthEvents() string { return filepath.Join(d.dir, "health.jsonl") }

// start runs the driver with the node's folders and extra flags.
func (d *driverProc) start(t *testing.T, extra ...string) {
	t.Helper()
	args := append([]string{"run", "--kubeconfig=" + cluster.Kubeconfig, "--node-name=" + d.k.Name, "--discovery=profile",
		"--plugin-dir=" + d.pluginDir(), "--registrar-dir=" + d.k.RegistrarDir, "--cdi-dir=" + d.cdiDir(),
		"--health-events=" + d.healthEvents()}, extra...)
	f, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "---- gpuplane-dra-driver %s\n", strings.Join(args, " "))
	d.cmd = exec.Command(d.bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.done = make(chan error, 1)
	go func(cmd *exec.Cmd) { d.done <- cmd.Wait(); f.Close() }(d.cmd)
}

// stop ends the driver with SIGTERM, as the kubelet stops a container.
func (d *driverProc) stop(t *testing.T) {
	t.Helper()
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("driver exited: %v\n%s", err, d.logTail())
		}
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		t.Errorf("driver did not stop on SIGTERM")
	}
	d.cmd = nil
}

func (d *driverProc) logTail() string {
	b, _ := os.ReadFile(d.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// checkpoint reads the driver's checkpoint: claim UID -> prepared claim.
func (d *driverProc) checkpoint(t *testing.T) map[string]plugin.PreparedClaim {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.pluginDir(), "checkpoint.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Claims map[string]plugin.PreparedClaim `json:"claims"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return f.Claims
}

// partitions lists the dynamic MIG partitions that exist on the node.
func (d *driverProc) partitions(t *testing.T) []profiles.Partition {
	t.Helper()
	p, err := profiles.ReadPartitions(filepath.Join(d.pluginDir(), profiles.PartitionStateFile))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// buildDriver builds gpuplane-dra-driver for the test.
func buildDriver(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "gpuplane-dra-driver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/gpuplane-dra-driver").CombinedOutput(); err != nil {
		t.Fatalf("build gpuplane-dra-driver: %v\n%s", err, out)
	}
	return bin
}

// nodePod creates a claim and a pod that uses it on the real kubelet's node.
func nodePod(ctx context.Context, t *testing.T, node, name string, spec resourcev1.ResourceClaimSpec) {
	t.Helper()
	if _, err := cluster.Client.ResourceV1().ResourceClaims("default").Create(ctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No service-account token: its volume would be a tmpfs mount that a
	// failed test could leave behind in the temporary folder.
	if _, err := cluster.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Tolerations:                  []corev1.Toleration{{Key: realNodeTaint.Key, Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](1),
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}},
			Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai:v0.11.0",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRunning waits until the kubelet reports the pod Running with its
// container started.
func waitRunning(ctx context.Context, t *testing.T, k *testcluster.Kubelet, name string) *corev1.Pod {
	t.Helper()
	for {
		p, err := cluster.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not running: %+v\nkubelet log:\n%s", name, p.Status, k.LogTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deletePods deletes pods and waits until the kubelet has removed them.
func deletePods(ctx context.Context, t *testing.T, k *testcluster.Kubelet, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := cluster.Client.CoreV1().Pods("default").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		for {
			_, err := cluster.Client.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s not deleted; kubelet log:\n%s", n, k.LogTail(20))
			case <-time.After(100 * time.Millisecond):
			}
		}
		_ = cluster.Client.ResourceV1().ResourceClaims("default").Delete(ctx, n, metav1.DeleteOptions{})
	}
}

// podContainer returns the runtime's record of the pod's one live container.
func podContainer(t *testing.T, k *testcluster.Kubelet, pod string) recordcri.Container {
	t.Helper()
	var live []recordcri.Container
	for _, c := range k.Runtime.Records().ContainersOf("default", pod) {
		if !c.Removed {
			live = append(live, c)
		}
	}
	if len(live) != 1 {
		t.Fatalf("pod %s: %d live containers in the runtime, want 1: %+v", pod, len(live), live)
	}
	return live[0]
}

// checkCDI checks that the container got exactly the CDI devices the
// driver prepared for the claim, and that the driver's CDI specs resolve
// them to the allocated devices' UUIDs. It returns those UUIDs.
func checkCDI(ctx context.Context, t *testing.T, d *driverProc, k *testcluster.Kubelet, pod string) []string {
	t.Helper()
	claim, err := cluster.Client.ResourceV1().ResourceClaims("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := d.checkpoint(t)[string(claim.UID)]
	if !ok {
		t.Fatalf("claim %s (%s) not in the driver's checkpoint", pod, claim.UID)
	}
	var want, uuids []string
	for _, dev := range pc.Devices {
		want = append(want, dev.CDIDeviceID)
		uuids = append(uuids, dev.UUID)
	}
	got := podContainer(t, k, pod).CDIDevices
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("pod %s: the runtime received CDI devices %v, the driver prepared %v", pod, got, want)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(d.cdiDir()), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	spec := &oci.Spec{Process: &oci.Process{}}
	unresolved, err := cache.InjectDevices(spec, got...)
	if err != nil || len(unresolved) > 0 {
		t.Fatalf("pod %s: CDI devices %v do not resolve (unresolved %v): %v", pod, got, unresolved, err)
	}
	for _, u := range uuids {
		if !slices.Contains(spec.Process.Env, "NVIDIA_VISIBLE_DEVICES="+u) {
			t.Errorf("pod %s: CDI edits %v lack NVIDIA_VISIBLE_DEVICES=%s", pod, spec.Process.Env, u)
		}
	}
	return uuids
}

// waitDevices waits until the node's published devices satisfy ok.
func waitDevices(ctx context.Context, t *testing.T, node string, what string, ok func([]resourcev1.Device) bool) []resourcev1.Device {
	t.Helper()
	for {
		list, err := cluster.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			t.Fatal(err)
		}
		var devs []resourcev1.Device
		for _, s := range list.Items {
			devs = append(devs, s.Spec.Devices...)
		}
		if len(devs) > 0 && ok(devs) {
			return devs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %s: devices never %s (%d published)", node, what, len(devs))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func devType(d resourcev1.Device) string {
	if a, ok := d.Attributes[resourcev1.QualifiedName("type")]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func devUUID(d resourcev1.Device) string {
	if a, ok := d.Attributes[resourcev1.QualifiedName("uuid")]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func allOfType(kind string) func([]resourcev1.Device) bool {
	return func(devs []resourcev1.Device) bool {
		for _, d := range devs {
			if devType(d) != kind {
				return false
			}
		}
		return true
	}
}
