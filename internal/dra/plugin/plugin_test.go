package plugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/dra/plugin/plugintest"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

const node = "gpu-node-1"

type rig struct {
	t       testing.TB
	client  kubernetes.Interface
	cfg     plugin.Config
	driver  *plugin.Driver
	kubelet *plugintest.Kubelet
	health  *plugintest.Health
}

func newRig(t testing.TB, profile string, f slices.Features) *rig {
	t.Helper()
	inv := nodeInventory(t, profile)
	dir, err := os.MkdirTemp("", "gp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &rig{t: t, client: fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}}),
		health: plugintest.NewHealth()}
	r.cfg = plugin.Config{NodeName: node, Client: r.client, Discoverer: profiles.Static{Node: inv},
		Partitioner: &profiles.Partitioner{Node: node, Inv: inv}, Health: r.health, Features: f,
		PluginDir: filepath.Join(dir, "plugin"), RegistrarDir: filepath.Join(dir, "registry"), CDIDir: filepath.Join(dir, "cdi")}
	os.MkdirAll(r.cfg.RegistrarDir, 0o755)
	r.start()
	return r
}

func (r *rig) start() {
	r.t.Helper()
	d, err := plugin.Start(context.Background(), r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.driver = d
	r.kubelet = &plugintest.Kubelet{RegistrarDir: r.cfg.RegistrarDir}
	if _, err := r.kubelet.Register(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { r.kubelet.Close(); d.Stop() })
}

func (r *rig) restart() {
	r.kubelet.Close()
	r.driver.Stop()
	r.start()
}

// claim creates an allocated claim for devices of this node.
func (r *rig) claim(name string, cfg string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	r.t.Helper()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	for i := range results {
		results[i].Driver, results[i].Pool = plugin.DriverName, node
		if results[i].Request == "" {
			results[i].Request = "gpu"
		}
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	if cfg != "" {
		c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: plugin.DriverName, Parameters: runtime.RawExtension{Raw: []byte(cfg)}}}}}
	}
	c, err := r.client.ResourceV1().ResourceClaims("default").Create(context.Background(), c, metav1.CreateOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func dev(name string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Device: name}
}

func TestPrepareRestartUnprepare(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{DynamicMIG: true})
	ctx := context.Background()
	whole := r.claim("whole", `{"apiVersion":"gpu.gpuplane.io/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicing":{"interval":"Long"}}}`, dev("gpu-1"))
	mig := r.claim("mig", "", dev("gpu-0-mig-3g-40gb-4"))
	res, err := r.kubelet.Prepare(ctx, whole, mig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"uid-whole", "uid-mig"} {
		if res[c].Error != "" || len(res[c].Devices) != 1 || len(res[c].Devices[0].CdiDeviceIds) != 1 {
			t.Fatalf("%s: %+v", c, res[c])
		}
	}
	id := res["uid-mig"].Devices[0].CdiDeviceIds[0]
	if !strings.HasPrefix(id, "k8s.gpu.gpuplane.io/claim=uid-mig-") {
		t.Errorf("CDI id %q", id)
	}
	spec := readSpec(t, r.cfg.CDIDir, "uid-mig")
	migUUID := r.driver.Prepared()["uid-mig"].Devices[0].UUID
	if !strings.HasPrefix(migUUID, "MIG-") || !strings.Contains(spec, "NVIDIA_VISIBLE_DEVICES="+migUUID) {
		t.Errorf("MIG CDI spec does not expose %s:\n%s", migUUID, spec)
	}
	if s := readSpec(t, r.cfg.CDIDir, "uid-whole"); !strings.Contains(s, "GPUPLANE_TIMESLICE_INTERVAL=Long") {
		t.Errorf("time-slicing config not in the spec:\n%s", s)
	}
	// The claim's device status says the device is ready and which UUID it is.
	got, _ := r.client.ResourceV1().ResourceClaims("default").Get(ctx, "mig", metav1.GetOptions{})
	if len(got.Status.Devices) != 1 || got.Status.Devices[0].Conditions[0].Type != "Ready" || !strings.Contains(string(got.Status.Devices[0].Data.Raw), migUUID) {
		t.Errorf("device status %+v", got.Status.Devices)
	}

	// A restarted plugin answers from its checkpoint with the same devices.
	r.restart()
	again, err := r.kubelet.Prepare(ctx, mig)
	if err != nil {
		t.Fatal(err)
	}
	if again["uid-mig"].Devices[0].CdiDeviceIds[0] != id {
		t.Errorf("after restart: %+v, want %s", again["uid-mig"], id)
	}
	// The same device for another claim is refused: the driver is the last line of defence.
	dup := r.claim("dup", "", dev("gpu-1"))
	res, _ = r.kubelet.Prepare(ctx, dup)
	if e := res["uid-dup"].Error; !strings.Contains(e, "already prepared for claim default/whole") {
		t.Errorf("double use: %q", e)
	}

	un, err := r.kubelet.Unprepare(ctx, whole, mig, dup)
	if err != nil {
		t.Fatal(err)
	}
	for uid, u := range un {
		if u.Error != "" {
			t.Errorf("unprepare %s: %s", uid, u.Error)
		}
	}
	if n := len(r.driver.Prepared()); n != 0 {
		t.Errorf("%d claims left in the checkpoint", n)
	}
	if m, _ := filepath.Glob(filepath.Join(r.cfg.CDIDir, "*")); len(m) != 0 {
		t.Errorf("CDI specs left: %v", m)
	}
	// The freed placement can be created again.
	mig2 := r.claim("mig2", "", dev("gpu-0-mig-4g-40gb-0"))
	if res, _ := r.kubelet.Prepare(ctx, mig2); res["uid-mig2"].Error != "" {
		t.Errorf("re-prepare on freed slices: %s", res["uid-mig2"].Error)
	}
}

func readSpec(t *testing.T, dir, uid string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*"+uid+"*"))
	if len(m) != 1 {
		t.Fatalf("CDI specs for %s: %v", uid, m)
	}
	b, _ := os.ReadFile(m[0])
	return string(b)
}

func TestSharedGPULimits(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{SharedGPUs: true})
	a := dev("gpu-0")
	a.ShareID = ptr.To(types.UID("share-a"))
	a.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("8Gi"), "compute": resource.MustParse("250m")}
	b := dev("gpu-0")
	b.ShareID = ptr.To(types.UID("share-b"))
	b.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("16Gi")}
	ca, cb := r.claim("a", "", a), r.claim("b", "", b)
	res, err := r.kubelet.Prepare(context.Background(), ca, cb)
	if err != nil {
		t.Fatal(err)
	}
	if res["uid-a"].Error != "" || res["uid-b"].Error != "" || res["uid-a"].Devices[0].GetShareId() != "share-a" {
		t.Fatalf("%+v", res)
	}
	sa, sb := readSpec(t, r.cfg.CDIDir, "uid-a"), readSpec(t, r.cfg.CDIDir, "uid-b")
	for _, want := range []string{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"} {
		if !strings.Contains(sa, want) {
			t.Errorf("claim a's spec lacks %s:\n%s", want, sa)
		}
	}
	if !strings.Contains(sb, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=16384M") || strings.Contains(sb, "ACTIVE_THREAD") {
		t.Errorf("claim b's spec:\n%s", sb)
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	r := newRig(t, "azure-nv12ads-a10-v5", slices.Features{VGPU: true})
	cases := map[string]string{
		`{"apiVersion":"gpu.gpuplane.io/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"MPS","mps":{"defaultActiveThreadPercent":50}}}`:     `unknown field "sharing.mps.defaultActiveThreadPercent"`,
		`{"apiVersion":"gpu.gpuplane.io/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"Spatial"}}`:                                         `sharing.strategy: "Spatial"`,
		`{"apiVersion":"gpu.gpuplane.io/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"MPS","mps":{"defaultActiveThreadPercentage":150}}}`: "defaultActiveThreadPercentage: 150, want 1..100",
		`{"apiVersion":"v1","kind":"GpuConfig"}`: "apiVersion/kind",
	}
	i := 0
	for cfg, want := range cases {
		i++
		c := r.claim("bad"+string(rune('a'+i)), cfg, dev("vgpu-0"))
		res, err := r.kubelet.Prepare(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if e := res[string(c.UID)].Error; !strings.Contains(e, want) {
			t.Errorf("config %s: error %q, want it to contain %q", cfg, e, want)
		}
	}
	if len(r.driver.Prepared()) != 0 {
		t.Error("a claim with bad config was prepared")
	}
}

func TestHealthTaintsAndRecovers(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gpu3 := r.driver.Published().Devices["gpu-3"].GPUUUID
	tainted := func() []string {
		list, err := r.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				if len(d.Taints) > 0 {
					out = append(out, d.Name+"="+d.Taints[0].Value)
				}
			}
		}
		return out
	}
	wait := func(want string) {
		for {
			got := strings.Join(tainted(), ",")
			if got == want {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("tainted devices %q, want %q", got, want)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	wait("")
	r.health.C <- plugin.HealthEvent{UUID: gpu3, Reason: "XID 48: double-bit ECC error"}
	wait("gpu-3=XID-48--double-bit-ECC-error")
	r.health.C <- plugin.HealthEvent{UUID: gpu3, Healthy: true}
	wait("")
}

func TestCheckpointCorruptionIsAnError(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{})
	c := r.claim("x", "", dev("gpu-0"))
	if _, err := r.kubelet.Prepare(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	r.kubelet.Close()
	r.driver.Stop()
	path := filepath.Join(r.cfg.PluginDir, "checkpoint.json")
	b, _ := os.ReadFile(path)
	var f map[string]any
	json.Unmarshal(b, &f)
	f["claims"].(map[string]any)["uid-x"].(map[string]any)["name"] = "edited"
	b, _ = json.Marshal(f)
	os.WriteFile(path, b, 0o600)
	if _, err := plugin.Start(context.Background(), r.cfg); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("start on an edited checkpoint: %v", err)
	}
}

func nodeInventory(tb testing.TB, profile string) *inventory.Node {
	tb.Helper()
	c := catalog.MustDefault()
	p, err := profiles.Lookup(c, profile)
	if err != nil {
		tb.Fatal(err)
	}
	inv, err := profiles.Discover(c, p, profiles.Node{Name: node})
	if err != nil {
		tb.Fatal(err)
	}
	return inv
}
