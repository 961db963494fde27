package fleet

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The fleet installs the driver's classes, and brings a stale one back to
// the driver's selector.
func TestInstallClasses(t *testing.T) {
	ctx := context.Background()
	stale := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.gpuplane.io"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "false"}}}}}
	client := fake.NewClientset(stale)
	for range 2 { // idempotent
		if err := InstallClasses(ctx, client, "gpu.gpuplane.io"); err != nil {
			t.Fatal(err)
		}
	}
	list, err := client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("%d classes, want gpu, mig and vgpu", len(list.Items))
	}
	for _, c := range list.Items {
		if e := c.Spec.Selectors[0].CEL.Expression; e == "false" {
			t.Errorf("%s keeps its stale selector", c.Name)
		}
	}
}
