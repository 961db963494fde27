package nvmldiscovery

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuplane/gpuplane/internal/dra/plugin"
)

// applicationXIDs are errors caused by the application, not the GPU
// (illegal address, page faults, preemption, ...): they do not make the
// device unhealthy.
var applicationXIDs = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}

// Health watches NVML's critical XID events and reports the device (GPU or
// MIG) unhealthy. NVML does not report recovery: a GPU reset restarts the
// plugin, which republishes the device healthy.
type Health struct {
	Lib nvml.Interface
	// WaitMs bounds each wait so the watch notices ctx ending (default 1000).
	WaitMs int
}

// Watch registers for XID events on every GPU and streams health events.
func (h *Health) Watch(ctx context.Context) (<-chan plugin.HealthEvent, error) {
	if ret := h.Lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml init: %v", ret)
	}
	set, ret := h.Lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		h.Lib.Shutdown()
		return nil, fmt.Errorf("nvml event set: %v", ret)
	}
	n, ret := h.Lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		h.Lib.Shutdown()
		return nil, fmt.Errorf("nvml device count: %v", ret)
	}
	for i := range n {
		d, ret := h.Lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		if ret := d.RegisterEvents(nvml.EventTypeXidCriticalError, set); ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED {
			h.Lib.Shutdown()
			return nil, fmt.Errorf("register XID events on GPU %d: %v", i, ret)
		}
	}
	wait := h.WaitMs
	if wait <= 0 {
		wait = 1000
	}
	out := make(chan plugin.HealthEvent)
	go func() {
		defer close(out)
		defer h.Lib.Shutdown()
		defer set.Free()
		for ctx.Err() == nil {
			e, ret := set.Wait(uint32(wait))
			if ret == nvml.ERROR_TIMEOUT {
				continue
			}
			if ret != nvml.SUCCESS || e.EventType != nvml.EventTypeXidCriticalError || applicationXIDs[e.EventData] {
				continue
			}
			uuid, ret := e.Device.GetUUID()
			if ret != nvml.SUCCESS {
				continue
			}
			select {
			case out <- plugin.HealthEvent{UUID: uuid, Reason: fmt.Sprintf("XID %d", e.EventData)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
