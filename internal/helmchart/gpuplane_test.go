package helmchart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const gpuplaneChart = "../../deploy/helm/gpuplane"

// digest is a well-formed image digest.
var digest = "sha256:" + strings.Repeat("0123456789abcdef", 4)

func renderGPUPlane(t *testing.T, values map[string]any) map[string][]string {
	t.Helper()
	return renderChart(t, gpuplaneChart, values)
}

func TestGPUPlaneChartDefaults(t *testing.T) {
	docs := renderGPUPlane(t, nil)
	for kind, n := range map[string]int{"Deployment": 1, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "Service": 1, "ServiceMonitor": 0} {
		if len(docs[kind]) != n {
			t.Errorf("%d %s, want %d", len(docs[kind]), kind, n)
		}
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(docs["Deployment"][0]), &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "ghcr.io/gpuplane/gpuplane:v0.1.0" {
		t.Errorf("image %q: want the chart's appVersion pinned", c.Image)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"controller run", "--leader-elect=false", "--metrics-addr=:8082", "--frontend-image=ghcr.io/gpuplane/gpuplane:v0.1.0"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if sc := c.SecurityContext; sc == nil || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("controller container security context %+v", sc)
	}
	docs = renderGPUPlane(t, map[string]any{"controller": map[string]any{"replicas": 2},
		"image":   map[string]any{"digest": digest},
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})
	if err := yaml.UnmarshalStrict([]byte(docs["Deployment"][0]), &d); err != nil {
		t.Fatal(err)
	}
	if c := d.Spec.Template.Spec.Containers[0]; c.Image != "ghcr.io/gpuplane/gpuplane:v0.1.0@"+digest || !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("two replicas with a digest: image %q args %v", c.Image, c.Args)
	}
	if len(docs["ServiceMonitor"]) != 1 {
		t.Error("serviceMonitor.enabled renders no ServiceMonitor")
	}
}

// The ClusterRole grants what the controller does and nothing wider: no
// wildcards, no secrets, writes only to what it owns.
func TestGPUPlaneChartLeastPrivilege(t *testing.T) {
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(renderGPUPlane(t, nil)["ClusterRole"][0]), &role); err != nil {
		t.Fatal(err)
	}
	grants := map[string][]string{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g == "*" || res == "*" || slices.Contains(r.Verbs, "*") {
					t.Errorf("wildcard rule %+v", r)
				}
				grants[g+"/"+res] = append(grants[g+"/"+res], r.Verbs...)
			}
		}
	}
	need := map[string][]string{
		"gpuplane.io/servingdeployments":         {"get", "list", "watch"},
		"gpuplane.io/servingdeployments/status":  {"update"},
		"resource.k8s.io/resourceslices":         {"list", "watch"},
		"resource.k8s.io/resourceclaims":         {"list", "watch"},
		"resource.k8s.io/deviceclasses":          {"list", "watch"},
		"resource.k8s.io/resourceclaimtemplates": {"create", "patch", "delete"},
		"apps/deployments":                       {"get", "patch", "delete"},
		"apps/deployments/scale":                 {"patch"},
		"/services":                              {"patch", "delete"},
		"/pods":                                  {"list", "watch"},
		"rbac.authorization.k8s.io/roles":        {"patch"},
		"rbac.authorization.k8s.io/rolebindings": {"patch"},
		"events.k8s.io/events":                   {"create"},
	}
	for res, verbs := range need {
		for _, v := range verbs {
			if !slices.Contains(grants[res], v) {
				t.Errorf("%s: the controller needs %s", res, v)
			}
		}
	}
	for res, verbs := range grants {
		if strings.HasSuffix(res, "/secrets") || (strings.HasSuffix(res, "/nodes") && slices.ContainsFunc(verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" })) ||
			(strings.HasPrefix(res, "resource.k8s.io/resource") && res != "resource.k8s.io/resourceclaimtemplates" && slices.Contains(verbs, "create")) {
			t.Errorf("%s: %v is wider than the controller needs", res, verbs)
		}
	}
}

// The CRD the chart installs is the one generated from api/, with the
// schema rules the API server enforces.
func TestGPUPlaneCRD(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(gpuplaneChart, "crds", "gpuplane.io_servingdeployments.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		t.Fatal(err)
	}
	v := crd.Spec.Versions[0]
	if crd.Spec.Group != "gpuplane.io" || v.Name != "v1alpha1" || v.Subresources == nil || v.Subresources.Status == nil {
		t.Fatalf("CRD %s %s: want gpuplane.io/v1alpha1 with a status subresource", crd.Spec.Group, v.Name)
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Model,Mode,Device,Workers,TTFT,ITL,Ready,Age" {
		t.Errorf("printer columns %v", cols)
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.Properties["slo"].XValidations) == 0 || len(spec.Properties["traffic"].XValidations) == 0 {
		t.Error("slo and traffic lost their CEL rules")
	}
}

// Values the chart cannot use are refused when the chart is rendered,
// naming the value, instead of rendering a controller that fails later.
func TestGPUPlaneBadValues(t *testing.T) {
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"controler": map[string]any{"replicas": 2}}, "additional properties 'controler' not allowed"},
		{map[string]any{"controller": map[string]any{"replicas": -1}}, "'/controller/replicas': minimum: got -1, want 0"},
		{map[string]any{"controller": map[string]any{"logFormat": "xml"}}, "'/controller/logFormat': value must be one of 'json', 'text'"},
		{map[string]any{"controller": map[string]any{"resources": map[string]any{"limit": map[string]any{"memory": "1Gi"}}}}, "'/controller/resources': additional properties 'limit' not allowed"},
		{map[string]any{"controller": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1 GB"}}}}, "'/controller/resources/limits/memory': '1 GB' does not match"},
		{map[string]any{"metrics": map[string]any{"port": "8082"}}, "'/metrics/port': got string, want integer"},
		{map[string]any{"metrics": map[string]any{"port": 70000}}, "'/metrics/port': maximum"},
		{map[string]any{"metrics": map[string]any{"port": 8081}}, "metrics.port: 8081 is the controller's health port"},
		{map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"interval": "30"}}}, "'/metrics/serviceMonitor/interval': '30' does not match"},
		{map[string]any{"image": map[string]any{"digest": "sha256:0123"}}, "'/image/digest': 'sha256:0123' does not match"},
		{map[string]any{"image": map[string]any{"tag": 2}}, "'/image/tag': got number, want string"},
		{map[string]any{"image": map[string]any{"pullPolicy": "always"}}, "'/image/pullPolicy': value must be one of"},
		{map[string]any{"image": map[string]any{"repository": ""}}, "'/image/repository'"},
	} {
		if _, err := Render(gpuplaneChart, "gp", "ns", tc.vals); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.vals, err, tc.want)
		}
	}
}
