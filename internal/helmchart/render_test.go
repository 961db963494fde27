package helmchart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
)

const chart = "../../deploy/helm/gpuplane-dra-driver"

type kinded struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func render(t *testing.T, values map[string]any) map[string][]string {
	t.Helper()
	return renderChart(t, chart, values)
}

// renderChart renders a chart and groups its documents by kind.
func renderChart(t *testing.T, dir string, values map[string]any) map[string][]string {
	t.Helper()
	docs, err := Render(dir, "gp", "gpuplane-system", values)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range docs {
		var k kinded
		if err := yaml.Unmarshal([]byte(d), &k); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		out[k.Kind] = append(out[k.Kind], d)
	}
	return out
}

func daemonSet(t *testing.T, docs map[string][]string) appsv1.DaemonSet {
	t.Helper()
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict([]byte(docs["DaemonSet"][0]), &ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestDefaults(t *testing.T) {
	docs := render(t, nil)
	for kind, n := range map[string]int{"DaemonSet": 1, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"DeviceClass": 3, "ValidatingAdmissionPolicy": 2, "ValidatingAdmissionPolicyBinding": 2} {
		if len(docs[kind]) != n {
			t.Errorf("%d %s, want %d", len(docs[kind]), kind, n)
		}
	}
	ds := daemonSet(t, docs)
	if ds.Spec.Template.Spec.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("node selector %v", ds.Spec.Template.Spec.NodeSelector)
	}
	aff := ds.Spec.Template.Spec.Affinity
	if aff == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key != "nvidia.com/gpu.deploy.device-plugin" {
		t.Error("no guard against the classic device plugin")
	}
	if ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntValue() != 0 {
		t.Error("maxSurge must be 0")
	}
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if pod.SecurityContext == nil || pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
		t.Error("the pod has no RuntimeDefault seccomp profile")
	}
	if c.LivenessProbe == nil || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("liveness probe %v, resources %v", c.LivenessProbe, c.Resources)
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/var/lib/kubelet/plugins" {
			t.Error("the whole kubelet plugins directory is mounted; only the driver's own")
		}
	}
	// Profile discovery touches no device: no privilege, no capability.
	prof := daemonSet(t, render(t, map[string]any{"discovery": "profile", "profile": "hgx-h100"})).Spec.Template.Spec.Containers[0].SecurityContext
	if prof == nil || prof.Privileged == nil || *prof.Privileged || prof.Capabilities == nil || len(prof.Capabilities.Drop) != 1 ||
		prof.AllowPrivilegeEscalation == nil || *prof.AllowPrivilegeEscalation {
		t.Errorf("profile discovery runs with %+v", prof)
	}
	// The chart's classes are the driver's.
	want := classes.All(plugin.DriverName, classes.Options{})
	for i, d := range docs["DeviceClass"] {
		var c resourceapi.DeviceClass
		if err := yaml.UnmarshalStrict([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		if c.Name != want[i].Name || !reflect.DeepEqual(c.Spec, want[i].Spec) {
			t.Errorf("chart class %s %+v, driver's %s %+v", c.Name, c.Spec, want[i].Name, want[i].Spec)
		}
	}
}

func TestValues(t *testing.T) {
	docs := render(t, map[string]any{
		"features":                    map[string]any{"dynamicMIG": true, "sharedGPUs": true},
		"deviceClasses":               map[string]any{"extendedResource": true},
		"gpuResourcesEnabledOverride": true,
		"discovery":                   "profile", "profile": "hgx-h100",
	})
	ds := daemonSet(t, docs)
	args := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")
	for _, a := range []string{"--dynamic-mig=true", "--shared-gpus=true", "--discovery=profile", "--profile=hgx-h100"} {
		if !strings.Contains(args, a) {
			t.Errorf("args %q lack %s", args, a)
		}
	}
	if ds.Spec.Template.Spec.Affinity != nil {
		t.Error("override set but the guard is still there")
	}
	if !strings.Contains(docs["DeviceClass"][0], "extendedResourceName: gpuplane.io/gpu") {
		t.Errorf("gpu class without the extended resource:\n%s", docs["DeviceClass"][0])
	}
	off := render(t, map[string]any{"deviceClasses": map[string]any{"install": false}, "restrictSlicesToOwnNode": false, "restrictClaimStatusToOwnNode": false})
	if len(off["DeviceClass"]) != 0 || len(off["ValidatingAdmissionPolicy"]) != 0 {
		t.Error("classes or policy rendered though turned off")
	}
}

func TestBadValues(t *testing.T) {
	for vals, want := range map[*map[string]any]string{
		{"discovery": "profile"}:                                     "needs profile",
		{"discovery": "dcgm"}:                                        "'/discovery': value must be one of 'nvml', 'profile'",
		{"profile": "hgx-h100"}:                                      `profile: "hgx-h100" is for discovery: profile`,
		{"feature": map[string]any{"dynamicMIG": true}}:              "additional properties 'feature' not allowed",
		{"features": map[string]any{"dynamicMig": true}}:             "'/features': additional properties 'dynamicMig' not allowed",
		{"features": map[string]any{"vgpu": "yes"}}:                  "'/features/vgpu': got string, want boolean",
		{"healthz": map[string]any{"port": 70000}}:                   "'/healthz/port': maximum",
		{"kubeletPlugin": map[string]any{"cdiDir": "var/run/cdi"}}:   "'/kubeletPlugin/cdiDir': 'var/run/cdi' does not match",
		{"tolerations": []any{map[string]any{"operator": "exists"}}}: "'/tolerations/0/operator': value must be one of 'Exists', 'Equal'",
		{"nodeSelector": map[string]any{"gpu": true}}:                "'/nodeSelector/gpu': got boolean, want string",
	} {
		if _, err := Render(chart, "gp", "ns", *vals); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", *vals, err, want)
		}
	}
}

// Every value a template reads is declared in its chart's schema: the
// schema refuses what it does not declare, so an undeclared value could
// never be set.
func TestSchemaDeclaresTemplateValues(t *testing.T) {
	ref := regexp.MustCompile(`\.Values((?:\.[A-Za-z0-9_]+)+)`)
	for _, dir := range []string{chart, "../../deploy/helm/gpuplane"} {
		raw, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var schema map[string]any
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		tmpls, _ := filepath.Glob(filepath.Join(dir, "templates", "*"))
		n := 0
		for _, f := range tmpls {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
				n++
				node := schema
				for _, key := range strings.Split(strings.TrimPrefix(m[1], "."), ".") {
					props, _ := node["properties"].(map[string]any)
					next, ok := props[key].(map[string]any)
					if !ok {
						t.Errorf("%s: %s reads .Values%s, which values.schema.json does not declare", dir, filepath.Base(f), m[1])
						break
					}
					node = next
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no .Values references found; is the pattern stale?", dir)
		}
	}
}
