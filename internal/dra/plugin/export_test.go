package plugin

import (
	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// InjectFaults replaces how the driver persists its checkpoint and CDI
// specs; nil keeps the real one. For fault-injection tests.
func InjectFaults(d *Driver, store func(string, map[types.UID]PreparedClaim) error,
	spec func(*cdi.Cache, types.UID, []PreparedDevice) ([]string, error)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.store, d.writeSpec = writeCheckpoint, writeCDI
	if store != nil {
		d.store = store
	}
	if spec != nil {
		d.writeSpec = spec
	}
}
