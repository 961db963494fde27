package manifest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/configure"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/manifest -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/manifest -update accepts it):\n%s", name, got)
	}
}

func disagg() configure.Config {
	return configure.Config{Mode: "disagg",
		Prefill: &configure.Pool{Role: "prefill", Device: "h200_sxm", TP: 1, Workers: 3, GPUsPerWorker: 1, Batch: 2},
		Decode:  &configure.Pool{Role: "decode", Device: "h200_sxm", TP: 2, Workers: 2, GPUsPerWorker: 2, Batch: 90}}
}

func opts(backend, driver string) Options {
	return Options{Model: "Qwen/Qwen3-32B-FP8", Backend: backend, Driver: driver, Namespace: "llm", Catalog: catalog.MustDefault()}
}

func TestGoldenManifests(t *testing.T) {
	mig := configure.Config{Mode: "agg", Agg: &configure.Pool{Role: "agg", Device: "h100_sxm:3g.40gb", TP: 1, Workers: 4, GPUsPerWorker: 1, Batch: 32}}
	vgpu := configure.Config{Mode: "disagg",
		Prefill: &configure.Pool{Role: "prefill", Device: "a10:1/2", TP: 1, Workers: 2, GPUsPerWorker: 1, Batch: 4},
		Decode:  &configure.Pool{Role: "decode", Device: "a10:1/2", TP: 1, Workers: 3, GPUsPerWorker: 1, Batch: 16}}
	multinode := configure.Config{Mode: "agg", Agg: &configure.Pool{Role: "agg", Device: "h100_sxm", TP: 8, PP: 2, Workers: 1, GPUsPerWorker: 16, Batch: 64}}
	q := opts("sglang", DriverNVIDIA)
	q.Quantization, q.Model = "fp8", "Qwen/Qwen3-8B"
	cases := []struct {
		name string
		cfg  configure.Config
		o    Options
		fn   func(configure.Config, Options) ([]byte, error)
	}{
		{"k8s-disagg-vllm.yaml", disagg(), opts("vllm", DriverGPUPlane), Kubernetes},
		{"k8s-mig-sglang-nvidia.yaml", mig, q, Kubernetes},
		{"k8s-vgpu-trtllm.yaml", vgpu, opts("trtllm", DriverGPUPlane), Kubernetes},
		{"k8s-multinode-vllm.yaml", multinode, opts("vllm", DriverGPUPlane), Kubernetes},
		{"dynamo-disagg-vllm.yaml", disagg(), opts("vllm", DriverGPUPlane), Dynamo},
		{"dynamo-disagg-sglang.yaml", disagg(), opts("sglang", DriverGPUPlane), Dynamo},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.fn(tc.cfg, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, out)
		})
	}
}

// Every emitted document decodes strictly into its Kubernetes type, and the
// claims, replicas and arguments are the chosen ones.
func TestKubernetesObjects(t *testing.T) {
	out, err := Kubernetes(disagg(), opts("vllm", DriverGPUPlane))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "\n---\n")
	if len(docs) != 11 {
		t.Fatalf("%d documents, want claim template, deployment and service per pool, and the frontend's account, role, binding, deployment and service", len(docs))
	}
	kinds := map[string]int{}
	for _, d := range docs {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal([]byte(d), &tm); err != nil {
			t.Fatal(err)
		}
		kinds[tm.Kind]++
		switch tm.Kind {
		case "Deployment":
			var dep appsv1.Deployment
			if err := yaml.UnmarshalStrict([]byte(d), &dep); err != nil {
				t.Fatal(err)
			}
			c := dep.Spec.Template.Spec.Containers[0]
			role := dep.Labels["gpuplane.io/role"]
			if role == "frontend" {
				// The router finds each pool by the labels the pools' pods carry.
				args := strings.Join(c.Args, " ")
				for _, r := range []string{"prefill", "decode"} {
					if !strings.Contains(args, "--"+r+"-selector app.kubernetes.io/name=qwen3-32b-fp8,gpuplane.io/role="+r) {
						t.Errorf("frontend args %q do not select the %s pods", args, r)
					}
				}
				if dep.Spec.Template.Spec.ServiceAccountName != dep.Name || len(dep.Spec.Template.Spec.ResourceClaims) != 0 {
					t.Errorf("frontend: service account %q, claims %v", dep.Spec.Template.Spec.ServiceAccountName, dep.Spec.Template.Spec.ResourceClaims)
				}
				continue
			}
			for _, probe := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
				if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/health" {
					t.Errorf("%s: startup, readiness and liveness probes on /health, got %+v", role, probe)
				}
			}
			if strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":") {
				t.Errorf("%s: image %q is not pinned", role, c.Image)
			}
			want := map[string]int32{"prefill": 3, "decode": 2}[role]
			if *dep.Spec.Replicas != want {
				t.Errorf("%s replicas %d, want %d", role, *dep.Spec.Replicas, want)
			}
			args := strings.Join(c.Args, " ")
			tp := map[string]string{"prefill": "1", "decode": "2"}[role]
			if !strings.Contains(args, "--tensor-parallel-size "+tp) || !strings.Contains(args, "NixlConnector") {
				t.Errorf("%s args %q", role, args)
			}
			if len(c.Resources.Claims) != 1 || *dep.Spec.Template.Spec.ResourceClaims[0].ResourceClaimTemplateName != dep.Name+"-gpus" {
				t.Errorf("%s does not claim its template", dep.Name)
			}
		case "ResourceClaimTemplate":
			var rct resourcev1.ResourceClaimTemplate
			if err := yaml.UnmarshalStrict([]byte(d), &rct); err != nil {
				t.Fatal(err)
			}
			req := rct.Spec.Spec.Devices.Requests[0].Exactly
			if req.DeviceClassName != "gpu.gpuplane.io" || !strings.Contains(req.Selectors[0].CEL.Expression, `"NVIDIA H200"`) {
				t.Errorf("claim %s: class %s selector %q", rct.Name, req.DeviceClassName, req.Selectors[0].CEL.Expression)
			}
			if want := map[string]int64{"qwen3-32b-fp8-prefill-gpus": 1, "qwen3-32b-fp8-decode-gpus": 2}[rct.Name]; req.Count != want {
				t.Errorf("claim %s asks for %d devices, want %d", rct.Name, req.Count, want)
			}
		case "Service":
			var svc corev1.Service
			if err := yaml.UnmarshalStrict([]byte(d), &svc); err != nil {
				t.Fatal(err)
			}
		}
	}
	if kinds["Deployment"] != 3 || kinds["ResourceClaimTemplate"] != 2 || kinds["Service"] != 3 || kinds["Role"] != 1 || kinds["RoleBinding"] != 1 {
		t.Errorf("kinds %v", kinds)
	}
}

func TestSelectors(t *testing.T) {
	cat := catalog.MustDefault()
	cases := []struct {
		device, driver, class string
		contains              []string
	}{
		{"h100_sxm", DriverGPUPlane, "gpu.gpuplane.io", []string{`["gpu.gpuplane.io"].productName == "NVIDIA H100 80GB HBM3"`}},
		{"h100_sxm:1g.10gb", DriverNVIDIA, "mig.nvidia.com", []string{`["gpu.nvidia.com"].profile == "1g.10gb"`}},
		{"a10:1/2", DriverNVIDIA, "gpu.nvidia.com", []string{`memory.compareTo(quantity("12Gi")) >= 0`}},
		{"a10:1/3", DriverGPUPlane, "vgpu.gpuplane.io", []string{`vgpuFraction == "1/3"`, `quantity("8Gi")`}},
	}
	for _, tc := range cases {
		d, err := cat.Device(tc.device, "")
		if err != nil {
			t.Fatal(err)
		}
		class, expr := Selector(tc.driver, d)
		if class != tc.class {
			t.Errorf("%s/%s: class %s, want %s", tc.device, tc.driver, class, tc.class)
		}
		for _, c := range tc.contains {
			if !strings.Contains(expr, c) {
				t.Errorf("%s/%s: %q lacks %q", tc.device, tc.driver, expr, c)
			}
		}
	}
}

func TestOptionErrors(t *testing.T) {
	o := opts("vllm", "amd")
	if _, err := Kubernetes(disagg(), o); err == nil || !strings.Contains(err.Error(), "dra-driver") {
		t.Errorf("bad driver: %v", err)
	}
	o = opts("tgi", DriverGPUPlane)
	if _, err := Dynamo(disagg(), o); err == nil || !strings.Contains(err.Error(), "backend") {
		t.Errorf("bad backend: %v", err)
	}
	c := disagg()
	c.Decode.Device = "h300"
	if _, err := Kubernetes(c, opts("vllm", DriverGPUPlane)); err == nil || !strings.Contains(err.Error(), "decode pool") {
		t.Errorf("unknown device: %v", err)
	}
}

func TestPrecisions(t *testing.T) {
	cat := catalog.MustDefault()
	for _, tc := range []struct{ model, precision, quant, kv string }{
		{"Qwen/Qwen3-32B", "fp8/bf16", "fp8", ""},
		{"Qwen/Qwen3-32B-FP8", "fp8/fp8", "", "fp8"},
		{"Qwen/Qwen3-32B", "bf16/bf16", "", ""},
		{"Qwen/Qwen3-8B-AWQ", "w4a16/bf16", "", ""},
	} {
		q, k, err := Precisions(cat, tc.model, tc.precision)
		if err != nil || q != tc.quant || k != tc.kv {
			t.Errorf("%s %s: quantization %q kv %q, want %q %q", tc.model, tc.precision, q, k, tc.quant, tc.kv)
		}
	}
}

func TestWeightOnlyPrecisionNeedsACheckpoint(t *testing.T) {
	_, _, err := Precisions(catalog.MustDefault(), "Qwen/Qwen3-8B", "w4a16/bf16")
	if err == nil || !strings.Contains(err.Error(), "Qwen/Qwen3-8B-AWQ") {
		t.Errorf("w4a16 from a bf16 checkpoint: got %v, want an error naming the AWQ checkpoint", err)
	}
}

// Emulated workers get the deployment's precisions, so they price what a
// real engine would load; native weights need no flag.
func TestEmulatedWorkerPrecision(t *testing.T) {
	p := disagg().Prefill
	o := opts(Emulate, DriverGPUPlane)
	o.Quantization, o.KVCache = "fp8", "fp8"
	c, _ := o.container(p)
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--precision fp8") || !strings.Contains(args, "--kv-precision fp8") {
		t.Errorf("emulate args %q: want --precision fp8 --kv-precision fp8", args)
	}
	o.Quantization, o.KVCache = "", ""
	c, _ = o.container(p)
	if args := strings.Join(c.Args, " "); strings.Contains(args, "precision") {
		t.Errorf("emulate args %q: native weights and a bf16 cache need no precision flags", args)
	}
}
