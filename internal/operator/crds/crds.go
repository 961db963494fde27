// Package crds embeds the CRDs generated from api/ (hack/gen-api.sh) and
// installs them, for clusters set up without the Helm chart.
package crds

import (
	"context"
	"embed"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

var resource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Objects are the embedded CRDs.
func Objects() ([]*unstructured.Unstructured, error) {
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// Install applies the CRDs (server-side) and waits until each is Established.
func Install(ctx context.Context, c dynamic.Interface, timeout time.Duration) error {
	objs, err := Objects()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, o := range objs {
		if _, err := c.Resource(resource).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "gpuplane", Force: true}); err != nil {
			return fmt.Errorf("install CRD %s: %w", o.GetName(), err)
		}
		for {
			got, err := c.Resource(resource).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err == nil && established(got) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established within %s", o.GetName(), timeout)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
