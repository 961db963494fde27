package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
)

// writeDump writes what `kubectl get ... -o yaml` would give for two AKS
// vGPU nodes, the driver's classes, a claim holding the 8 GiB share and a
// pod whose claim wants another.
func writeDump(t *testing.T) string {
	t.Helper()
	f, err := fleet.Parse([]byte(`apiVersion: gpuplane.io/v1alpha1
kind: Fleet
spec:
  features: {vgpu: true}
  nodePools:
  - {name: nv6, profile: azure-nv6ads-a10-v5, count: 1}
  - {name: nv12, profile: azure-nv12ads-a10-v5, count: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := f.Nodes(catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	var objs []any
	for _, n := range nodes {
		objs = append(objs, corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}})
		for i, s := range n.Slices.Slices {
			objs = append(objs, resourceapi.ResourceSlice{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
				ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-" + string(rune('0'+i))},
				Spec: resourceapi.ResourceSliceSpec{Driver: plugin.DriverName, NodeName: ptr.To(n.Name), Devices: s.Devices,
					Pool: resourceapi.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1}}})
		}
	}
	for _, c := range classes.All(plugin.DriverName, classes.Options{}) {
		objs = append(objs, c)
	}
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "vgpu.gpuplane.io", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.capacity["gpu.gpuplane.io"].memory.compareTo(quantity("8Gi")) >= 0 && device.attributes["gpu.gpuplane.io"].productName == "NVIDIA A10"`}}}}}}}}
	tm := metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"}
	objs = append(objs,
		resourceapi.ResourceClaim{TypeMeta: tm, ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "default", UID: "u1"}, Spec: spec,
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: plugin.DriverName, Pool: "nv12-0", Device: "vgpu-0"}}}}}},
		resourceapi.ResourceClaim{TypeMeta: tm, ObjectMeta: metav1.ObjectMeta{Name: "want", Namespace: "default", UID: "u2"}, Spec: spec},
		corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "vllm", Namespace: "default"},
			Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("want")}},
				Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}}})
	var b strings.Builder
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	path := filepath.Join(t.TempDir(), "dump.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExplainFromDump(t *testing.T) {
	dump := writeDump(t)
	out, _, err := run(t, "explain", "pod", "vllm", "--from", dump)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "explain-pod.txt", out)
	out, _, err = run(t, "explain", "claim", "want", "--from", dump, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"allocatable": false`) || !strings.Contains(out, `"kind": "in-use"`) {
		t.Errorf("json:\n%s", out)
	}
	if _, _, err := run(t, "explain", "claim", "nope", "--from", dump); err == nil || !strings.Contains(err.Error(), "[held want]") {
		t.Errorf("unknown claim: %v", err)
	}
	tmpl := filepath.Join(t.TempDir(), "t.yaml")
	os.WriteFile(tmpl, []byte(`apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: small-vgpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: vgpu.gpuplane.io}
`), 0o600)
	more := filepath.Join(t.TempDir(), "more.yaml")
	os.WriteFile(more, []byte(`apiVersion: gpuplane.io/v1alpha1
kind: Fleet
spec:
  features: {vgpu: true}
  nodePools:
  - {name: nv18, profile: azure-nv18ads-a10-v5, count: 3}
`), 0o600)
	out, _, err = run(t, "explain", "capacity", "-f", tmpl, "--from", dump, "--add-nodes", more)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "explain-capacity.txt", out)
	os.WriteFile(tmpl, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600)
	if _, _, err := run(t, "explain", "capacity", "-f", tmpl, "--from", dump); err == nil || !strings.Contains(err.Error(), "ResourceClaimTemplate") {
		t.Errorf("wrong kind: %v", err)
	}
}

// A dump is not checked by an API server: a nonsense count or a second
// copy of a claim is an error naming it, never a crash.
func TestExplainRefusesNonsenseDumps(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"negative count": {"count: 1", "count: -2", "exactly.count: -2 must be 1 to 32"},
		"huge count":     {"count: 1", "count: 100000", "exactly.count: 100000"},
		"bad mode":       {"allocationMode: ExactCount", "allocationMode: Some", "allocationMode"},
	} {
		d := writeDump(t)
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d, []byte(strings.ReplaceAll(string(b), tc.from, tc.to)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run(t, "explain", "claim", "want", "--from", d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
	d := writeDump(t)
	b, _ := os.ReadFile(d)
	i := strings.Index(string(b), "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim")
	if i < 0 {
		t.Fatal("no claim in the dump")
	}
	twice := string(b) + string(b)[i:]
	if err := os.WriteFile(d, []byte(twice), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "explain", "claim", "want", "--from", d); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate claim: got %v", err)
	}
	// Objects that are not a dump's are named, not reported as a scheme error.
	for doc, want := range map[string]string{
		"apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\n": "kind Fleet (gpuplane.io/v1alpha1) is not used by explain",
		"kind: ResourceClaim\n":                           "an object without apiVersion and kind",
	} {
		if err := os.WriteFile(d, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run(t, "explain", "claim", "want", "--from", d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", doc, err, want)
		}
	}
}
