package plugin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

func TestFeaturesForNode(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{
		LabelSharedGPUs: "true", LabelVGPU: "false"}}}
	f, err := FeaturesForNode(n, slices.Features{VGPU: true, DynamicMIG: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := (slices.Features{SharedGPUs: true, DynamicMIG: true}); f != want {
		t.Errorf("features %+v, want %+v", f, want)
	}
	n.Labels[LabelDynamicMIG] = "yes please"
	if _, err := FeaturesForNode(n, slices.Features{}); err == nil || !strings.Contains(err.Error(), LabelDynamicMIG) {
		t.Errorf("bad label: %v", err)
	}
}
