// Package classes holds the driver's DeviceClasses: one per device type,
// selecting on the driver and the "type" attribute.
package classes

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ExtendedResourceName lets pods that ask for gpuplane.io/gpu in their
// resource limits be served by DRA through the gpu class.
const ExtendedResourceName = "gpuplane.io/gpu"

// Options shape the classes.
type Options struct {
	// ExtendedResource sets extendedResourceName on gpu.gpuplane.io.
	ExtendedResource bool
}

// All returns gpu.gpuplane.io, mig.gpuplane.io and vgpu.gpuplane.io.
func All(driver string, o Options) []resourceapi.DeviceClass {
	var out []resourceapi.DeviceClass
	for _, kind := range []string{"gpu", "mig", "vgpu"} {
		c := resourceapi.DeviceClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
			ObjectMeta: metav1.ObjectMeta{Name: kind + ".gpuplane.io", Labels: map[string]string{"app.kubernetes.io/part-of": "gpuplane"}},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == %q && device.attributes[%q].type == %q", driver, driver, kind)}}}},
		}
		if kind == "gpu" && o.ExtendedResource {
			c.Spec.ExtendedResourceName = ptr.To(ExtendedResourceName)
		}
		out = append(out, c)
	}
	return out
}
