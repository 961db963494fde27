package slices

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

// Device kinds, the value of the "type" attribute.
const (
	KindGPU  = "gpu"
	KindMIG  = "mig"
	KindVGPU = "vgpu"
)

// PCIeRootAttribute is Kubernetes' standard attribute for a device's PCIe root complex.
const PCIeRootAttribute resourceapi.QualifiedName = "resource.kubernetes.io/pcieRoot"

type attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute

func (a attrs) str(k, v string) {
	if v != "" {
		a[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
	}
}

func (a attrs) ver(k, v string) {
	if v != "" {
		a[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{VersionValue: ptr.To(v)}
	}
}

func (a attrs) num(k string, v int) {
	a[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(v))}
}

// gpuAttributes are the attributes every device of GPU g carries, with
// NVIDIA's names where the meaning is the same so selectors port.
func gpuAttributes(n *inventory.Node, g inventory.GPU, kind string) attrs {
	a := attrs{}
	a.str("type", kind)
	a.str("productName", g.ProductName)
	a.str("brand", g.Brand)
	a.str("architecture", g.Architecture)
	a.ver("cudaComputeCapability", inventory.Semver(g.CUDAComputeCapability))
	a.ver("driverVersion", n.DriverVersion)
	a.ver("cudaDriverVersion", n.CUDADriverVersion)
	a.num("index", g.Index)
	if g.PCIeRoot != "" {
		a[PCIeRootAttribute] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.PCIeRoot)}
	}
	if g.NVLink != nil {
		a.str("nvlinkDomain", g.NVLink.ClusterUUID)
		a.str("nvlinkClique", fmt.Sprintf("%s.%d", g.NVLink.ClusterUUID, g.NVLink.CliqueID))
	}
	return a
}

// milli is a share of a whole GPU as a quantity: 1/7 is 142m (rounded down,
// so "at least 1/7" is compute >= 142m).
func milli(num, den int) resource.Quantity {
	return *resource.NewMilliQuantity(int64(num*1000/den), resource.DecimalSI)
}

func capacity(mem int64, compute resource.Quantity) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"memory":  {Value: *resource.NewQuantity(mem, resource.BinarySI)},
		"compute": {Value: compute},
	}
}
