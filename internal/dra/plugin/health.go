package plugin

import (
	"context"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

// healthResend keeps the kubelet's view fresh inside its 30 s timeout.
const healthResend = 20 * time.Second

// watchHealth applies health events: an unhealthy device is republished
// with a NoSchedule taint, a recovered one without.
func (d *Driver) watchHealth(ctx context.Context, events <-chan HealthEvent) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			d.mu.Lock()
			_, was := d.unhealthy[ev.UUID]
			if ev.Healthy {
				delete(d.unhealthy, ev.UUID)
			} else {
				d.unhealthy[ev.UUID] = ev.Reason
			}
			if was == !ev.Healthy {
				d.mu.Unlock()
				continue
			}
			r, err := slices.Build(d.inv, d.cfg.Features, d.unhealthy)
			if err == nil {
				d.published = r
				close(d.healthGen)
				d.healthGen = make(chan struct{})
			}
			d.mu.Unlock()
			if err != nil {
				logger.Error(err, "rebuild slices after a health change")
				continue
			}
			logger.Info("device health changed", "uuid", ev.UUID, "healthy", ev.Healthy, "reason", ev.Reason)
			if err := d.publish(ctx); err != nil {
				logger.Error(err, "publish slices after a health change")
			}
		}
	}
}

// WatchHealthStatus reports every published device's health to the kubelet
// now, on each change, and often enough that the kubelet never times out.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	tick := time.NewTicker(healthResend)
	defer tick.Stop()
	for {
		d.mu.Lock()
		report := d.healthReport()
		changed := d.healthGen
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case reports <- report:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-changed:
		}
	}
}

func (d *Driver) healthReport() kubeletplugin.DeviceHealthReport {
	now := time.Now()
	var r kubeletplugin.DeviceHealthReport
	for name, a := range d.published.Devices {
		h := kubeletplugin.DeviceHealth{PoolName: d.cfg.NodeName, DeviceName: name, Health: kubeletplugin.HealthStatusHealthy,
			LastUpdated: now, HealthCheckTimeout: 2 * healthResend}
		for _, u := range []string{a.GPUUUID, a.MIGUUID} {
			if reason, bad := d.unhealthy[u]; bad && u != "" {
				h.Health, h.Message = kubeletplugin.HealthStatusUnhealthy, reason
			}
		}
		r.Devices = append(r.Devices, h)
	}
	return r
}
