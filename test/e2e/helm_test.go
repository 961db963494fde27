//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/helmchart"
)

// TestHelmChartServerDryRun renders the driver's and the controller's charts with Helm's library
// and has the API server admit every object (server-side apply, dry-run), with
// the defaults and with every feature on.
func TestHelmChartServerDryRun(t *testing.T) {
	ctx := ctxFor(t)
	const ns = "gpuplane-system"
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cluster.Client.Discovery()))
	for _, tc := range []struct {
		chart  string
		values map[string]any
	}{{"gpuplane-dra-driver", nil}, {"gpuplane-dra-driver", map[string]any{
		"features":                    map[string]any{"dynamicMIG": true, "sharedGPUs": true, "nvlinkDomains": true},
		"deviceClasses":               map[string]any{"extendedResource": true},
		"gpuResourcesEnabledOverride": true,
	}}, {"gpuplane", nil}, {"gpuplane", map[string]any{"controller": map[string]any{"replicas": 2}, "image": map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)}}}} {
		docs, err := helmchart.Render("../../deploy/helm/"+tc.chart, "gp", ns, tc.values)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			var obj unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(d), &obj.Object); err != nil {
				t.Fatal(err)
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %v", gvk, err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == "namespace" {
				ri = dyn.Resource(m.Resource).Namespace(ns)
			}
			// Server-side apply also covers objects that exist (the classes other tests installed).
			if _, err := ri.Apply(context.Background(), obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: "helm-dry-run",
				Force: true, DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s: %s %s rejected by the API server: %v", tc.chart, gvk.Kind, obj.GetName(), err)
			}
		}
	}
}
