package explain

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
)

// validateClaim checks what the allocator takes on trust and the API server
// would have refused: a dump can hold anything. The error names the field.
func validateClaim(c *resourceapi.ResourceClaim) error {
	where := fmt.Sprintf("claim %s/%s: spec.devices.requests", c.Namespace, c.Name)
	reqs := c.Spec.Devices.Requests
	if len(reqs) > resourceapi.DeviceRequestsMaxSize {
		return fmt.Errorf("%s: %d requests, at most %d", where, len(reqs), resourceapi.DeviceRequestsMaxSize)
	}
	check := func(path string, e *resourceapi.ExactDeviceRequest) error {
		if e.DeviceClassName == "" {
			return fmt.Errorf("%s.deviceClassName: required", path)
		}
		switch e.AllocationMode {
		case "", resourceapi.DeviceAllocationModeExactCount:
			if e.Count < 1 || e.Count > resourceapi.AllocationResultsMaxSize {
				return fmt.Errorf("%s.count: %d must be 1 to %d", path, e.Count, resourceapi.AllocationResultsMaxSize)
			}
		case resourceapi.DeviceAllocationModeAll:
			if e.Count != 0 {
				return fmt.Errorf("%s.count: %d must be unset with allocationMode All", path, e.Count)
			}
		default:
			return fmt.Errorf("%s.allocationMode: %q is not ExactCount or All", path, e.AllocationMode)
		}
		return nil
	}
	for i, r := range reqs {
		path := fmt.Sprintf("%s[%d]", where, i)
		switch {
		case r.Name == "":
			return fmt.Errorf("%s.name: required", path)
		case (r.Exactly == nil) == (len(r.FirstAvailable) == 0):
			return fmt.Errorf("%s: give exactly one of exactly and firstAvailable", path)
		case r.Exactly != nil:
			if err := check(path+".exactly", r.Exactly); err != nil {
				return err
			}
		case len(r.FirstAvailable) > resourceapi.FirstAvailableDeviceRequestMaxSize:
			return fmt.Errorf("%s.firstAvailable: %d alternatives, at most %d", path, len(r.FirstAvailable), resourceapi.FirstAvailableDeviceRequestMaxSize)
		}
		for j, sub := range r.FirstAvailable {
			e := resourceapi.ExactDeviceRequest{DeviceClassName: sub.DeviceClassName, AllocationMode: sub.AllocationMode, Count: sub.Count}
			if err := check(fmt.Sprintf("%s.firstAvailable[%d]", path, j), &e); err != nil {
				return err
			}
		}
	}
	return nil
}
