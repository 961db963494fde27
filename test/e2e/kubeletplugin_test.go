//go:build e2e

package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/dra/plugin/plugintest"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
	"github.com/gpuplane/gpuplane/internal/drivercli"
	"github.com/gpuplane/gpuplane/internal/testcluster"
)

// TestKubeletPluginOnRealControlPlane runs the driver's kubelet plugin for
// a fake node against the real API server: it publishes the node's slices,
// the real scheduler allocates a dynamic MIG partition from them, and the
// test, acting as the kubelet, registers with the plugin and calls prepare
// and unprepare over its gRPC sockets, with a plugin restart in between. A
// health event taints the GPU in the published slices and recovery clears it.
func TestKubeletPluginOnRealControlPlane(t *testing.T) {
	ctx := ctxFor(t)
	ensureClasses(ctx, t)
	node, err := cluster.CreateGPUNode(ctx, testcluster.GPUNode{Name: "kp-0", InstanceType: "Standard_ND96isr_H100_v5",
		NodePool: "kp", GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUs: 2, Labels: map[string]string{"e2e-case": "kubelet"}})
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.MustDefault()
	prof, _ := profiles.Lookup(c, "hgx-h100")
	inv, err := profiles.Discover(c, prof, profiles.Node{Name: node.Name, GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := struct {
		Name string
		Inv  *inventory.Node
	}{node.Name, inv}
	dir, err := os.MkdirTemp("", "kp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	health := plugintest.NewHealth()
	cfg := plugin.Config{NodeName: n.Name, Client: cluster.Client, Discoverer: profiles.Static{Node: n.Inv},
		Partitioner: &profiles.Partitioner{Node: n.Name, Inv: n.Inv}, Health: health,
		Features:  slices.Features{DynamicMIG: true},
		PluginDir: filepath.Join(dir, "plugin"), RegistrarDir: filepath.Join(dir, "registry"), CDIDir: filepath.Join(dir, "cdi")}
	os.MkdirAll(cfg.RegistrarDir, 0o755)
	pctx := klog.NewContext(context.Background(), klog.Background())
	d, err := plugin.Start(pctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubelet := &plugintest.Kubelet{RegistrarDir: cfg.RegistrarDir}
	info, err := kubelet.Register(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(info.Endpoint, "dra.sock") {
		t.Errorf("endpoint %q", info.Endpoint)
	}
	waitSlices(ctx, t, n.Name, func(devs int, tainted int) bool { return devs == 2*26 })

	claimPod(ctx, t, "kp-a", map[string]string{"e2e-case": "kubelet"},
		exactly("mig.gpuplane.io", attr("profile")+` == "3g.40gb"`, 1, nil))
	mustRun(ctx, t, "kp-a")
	claim, err := cluster.Client.ResourceV1().ResourceClaims("default").Get(ctx, "kp-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := kubelet.Prepare(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	r := res[string(claim.UID)]
	if r.Error != "" || len(r.Devices) != 1 || len(r.Devices[0].CdiDeviceIds) != 1 {
		t.Fatalf("prepare: %+v", r)
	}
	cdiID := r.Devices[0].CdiDeviceIds[0]
	specs, _ := filepath.Glob(filepath.Join(cfg.CDIDir, "*"+string(claim.UID)+"*"))
	if len(specs) != 1 {
		t.Fatalf("CDI specs %v", specs)
	}
	spec, _ := os.ReadFile(specs[0])
	if !strings.Contains(string(spec), "NVIDIA_VISIBLE_DEVICES=MIG-") {
		t.Errorf("CDI spec does not expose a MIG device:\n%s", spec)
	}
	ckpt, _ := os.ReadFile(filepath.Join(cfg.PluginDir, "checkpoint.json"))
	if !strings.Contains(string(ckpt), string(claim.UID)) || !strings.Contains(string(ckpt), plugin.CheckpointVersion) {
		t.Errorf("checkpoint lacks the claim:\n%s", ckpt)
	}
	// Device status on the claim (GA): Ready, with the MIG UUID.
	for {
		c, _ := cluster.Client.ResourceV1().ResourceClaims("default").Get(ctx, "kp-a", metav1.GetOptions{})
		if len(c.Status.Devices) == 1 && c.Status.Devices[0].Conditions[0].Type == "Ready" && strings.Contains(string(c.Status.Devices[0].Data.Raw), "MIG-") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("claim device status %+v", c.Status.Devices)
		case <-time.After(100 * time.Millisecond):
		}
	}

	// Restart: the new plugin answers from the checkpoint.
	kubelet.Close()
	d.Stop()
	d, err = plugin.Start(pctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	kubelet = &plugintest.Kubelet{RegistrarDir: cfg.RegistrarDir}
	if _, err := kubelet.Register(ctx); err != nil {
		t.Fatal(err)
	}
	defer kubelet.Close()
	res, err = kubelet.Prepare(ctx, claim)
	if err != nil || res[string(claim.UID)].Devices[0].CdiDeviceIds[0] != cdiID {
		t.Fatalf("prepare after restart: %+v %v, want %s", res, err, cdiID)
	}

	// Health: the allocated GPU turns unhealthy; its devices are tainted.
	gpu := d.Published().Devices[claim.Status.Allocation.Devices.Results[0].Device].GPUUUID
	health.C <- plugin.HealthEvent{UUID: gpu, Reason: "XID 79"}
	waitSlices(ctx, t, n.Name, func(_, tainted int) bool { return tainted == 26 })
	health.C <- plugin.HealthEvent{UUID: gpu, Healthy: true}
	waitSlices(ctx, t, n.Name, func(_, tainted int) bool { return tainted == 0 })

	un, err := kubelet.Unprepare(ctx, claim)
	if err != nil || un[string(claim.UID)].Error != "" {
		t.Fatalf("unprepare: %+v %v", un, err)
	}
	if left, _ := filepath.Glob(filepath.Join(cfg.CDIDir, "*")); len(left) != 0 {
		t.Errorf("CDI specs left after unprepare: %v", left)
	}
	if len(d.Prepared()) != 0 {
		t.Error("checkpoint still holds the claim")
	}
}

// waitSlices waits until the node's published devices satisfy ok.
func waitSlices(ctx context.Context, t *testing.T, node string, ok func(devices, tainted int) bool) {
	t.Helper()
	waitDevices(ctx, t, node, "as wanted", func(devs []resourcev1.Device) bool {
		tainted := 0
		for _, d := range devs {
			if len(d.Taints) > 0 {
				tainted++
			}
		}
		return ok(len(devs), tainted)
	})
}

// TestDriverBinaryNodeLabelOptIn runs the gpuplane-dra-driver command for a
// node whose pool label opts it into shared GPUs: its slices carry shared
// devices though the flags leave the feature off.
func TestDriverBinaryNodeLabelOptIn(t *testing.T) {
	ctx := ctxFor(t)
	node, err := cluster.CreateGPUNode(ctx, testcluster.GPUNode{Name: "bin-0", InstanceType: "Standard_ND96isr_H200_v5",
		NodePool: "bin", GPUProduct: "NVIDIA-H200", GPUs: 8, Labels: map[string]string{plugin.LabelSharedGPUs: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "bin")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "registry"), 0o755)
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	var stderr strings.Builder
	go func() {
		done <- drivercli.Main(rctx, []string{"run", "--discovery=profile", "--profile=hgx-h200", "--node-name=" + node.Name,
			"--kubeconfig=" + cluster.Kubeconfig, "--plugin-dir=" + filepath.Join(dir, "plugin"),
			"--registrar-dir=" + filepath.Join(dir, "registry"), "--cdi-dir=" + filepath.Join(dir, "cdi")}, io.Discard, &stderr)
	}()
	for {
		list, err := cluster.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
		if err != nil {
			t.Fatal(err)
		}
		shared := 0
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
					shared++
				}
			}
		}
		if shared == 8 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("driver exited with %d: %s", code, stderr.String())
		case <-ctx.Done():
			t.Fatalf("%d shared GPUs published, want 8", shared)
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("driver exited with %d after cancel: %s", code, stderr.String())
	}
}
