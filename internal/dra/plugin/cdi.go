package plugin

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// CDI vendor and class of the per-claim devices the plugin writes.
const (
	cdiVendor = "k8s.gpu.gpuplane.io"
	cdiClass  = "claim"
)

// cdiDeviceName is unique per claim and device (and share), so a runtime's
// cached spec can never answer for a later claim.
func cdiDeviceName(claim types.UID, dev PreparedDevice) string {
	n := string(claim) + "-" + dev.Device
	if dev.ShareID != nil {
		n += "-" + string(*dev.ShareID)
	}
	return n
}

func cdiSpecName(claim types.UID) string {
	return cdi.GenerateTransientSpecName(cdiVendor, cdiClass, string(claim))
}

// containerEdits is what the container gets for one device: the GPU or MIG
// UUID for the NVIDIA container runtime, and the sharing limits.
func containerEdits(dev PreparedDevice) cdispec.ContainerEdits {
	env := []string{
		"NVIDIA_VISIBLE_DEVICES=" + dev.UUID,
		"GPUPLANE_DEVICE_" + strings.ToUpper(strings.ReplaceAll(dev.Device, "-", "_")) + "=" + dev.UUID,
	}
	if dev.MemoryMi > 0 {
		// MPS clients see the device as index 0 inside the container.
		env = append(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0="+strconv.FormatInt(dev.MemoryMi, 10)+"M")
	}
	if dev.ComputePercent > 0 {
		env = append(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(dev.ComputePercent))
	}
	if c := dev.Config; c != nil && c.Sharing != nil {
		env = append(env, "GPUPLANE_SHARING_STRATEGY="+c.Sharing.Strategy)
		if ts := c.Sharing.TimeSlicing; ts != nil {
			env = append(env, "GPUPLANE_TIMESLICE_INTERVAL="+ts.Interval)
		}
		if m := c.Sharing.MPS; m != nil {
			if m.DefaultActiveThreadPercentage != nil && dev.ComputePercent == 0 {
				env = append(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(*m.DefaultActiveThreadPercentage))
			}
			if m.DefaultPinnedDeviceMemoryLimit != nil && dev.MemoryMi == 0 {
				env = append(env, fmt.Sprintf("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%dM", m.DefaultPinnedDeviceMemoryLimit.Value()>>20))
			}
		}
	}
	return cdispec.ContainerEdits{Env: env}
}

// writeCDI writes one claim's spec and returns the qualified device IDs in
// the order of devs.
func writeCDI(cache *cdi.Cache, claim types.UID, devs []PreparedDevice) ([]string, error) {
	spec := &cdispec.Spec{Version: cdispec.CurrentVersion, Kind: cdiVendor + "/" + cdiClass}
	ids := make([]string, len(devs))
	for i, d := range devs {
		name := cdiDeviceName(claim, d)
		spec.Devices = append(spec.Devices, cdispec.Device{Name: name, ContainerEdits: containerEdits(d)})
		ids[i] = parser.QualifiedName(cdiVendor, cdiClass, name)
	}
	if err := cache.WriteSpec(spec, cdiSpecName(claim)); err != nil {
		return nil, fmt.Errorf("write CDI spec for claim %s: %w", claim, err)
	}
	return ids, nil
}
