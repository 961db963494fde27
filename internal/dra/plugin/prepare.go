package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metaac "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// PrepareResourceClaims prepares each claim's devices of this driver and
// node. A claim prepared before (also before a restart) gets the same
// answer from the checkpoint. Preparing is a transaction: the new state is
// on disk (synced) before success is reported or memory changes, and a
// step that fails undoes what the claim's earlier steps made.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	next := maps.Clone(d.prepared)
	var fresh []types.UID
	for _, c := range claims {
		if pc, ok := next[c.UID]; ok {
			out[c.UID] = result(pc)
			continue
		}
		pc, err := d.prepare(c, next)
		if err != nil {
			out[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)}
			continue
		}
		next[c.UID] = pc
		fresh = append(fresh, c.UID)
		out[c.UID] = result(pc)
	}
	if len(fresh) > 0 {
		if err := d.store(d.ckpt, next); err != nil {
			// Not on disk, so not prepared: undo, and let the kubelet retry.
			for _, uid := range fresh {
				if terr := d.teardown(uid, next[uid]); terr != nil {
					klog.FromContext(ctx).Error(terr, "undoing a prepare whose checkpoint failed", "claim", uid)
				}
				out[uid] = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w; the prepare was undone", next[uid].Namespace, next[uid].Name, err)}
			}
			return out, nil
		}
		d.prepared = next
	}
	for _, c := range claims {
		if r := out[c.UID]; r.Err == nil {
			d.reportStatus(ctx, c, d.prepared[c.UID])
		}
	}
	return out, nil
}

// teardown destroys a prepared claim's dynamic partitions and CDI spec.
func (d *Driver) teardown(uid types.UID, pc PreparedClaim) error {
	err := d.destroyPartitions(pc.Devices)
	if e := d.cdi.RemoveSpec(cdiSpecName(uid)); e != nil && err == nil {
		err = fmt.Errorf("remove CDI spec: %w", e)
	}
	return err
}

// destroyPartitions destroys the dynamic partitions among devs, all of
// them even when one fails, and returns the first failure.
func (d *Driver) destroyPartitions(devs []PreparedDevice) error {
	var err error
	for _, dev := range devs {
		if !dev.Dynamic {
			continue
		}
		if e := d.cfg.Partitioner.Destroy(dev.GPUUUID, dev.Profile, dev.Start); e != nil && err == nil {
			err = fmt.Errorf("destroy MIG %s at %d on %s: %w", dev.Profile, dev.Start, dev.GPUUUID, e)
		}
	}
	return err
}

func result(pc PreparedClaim) kubeletplugin.PrepareResult {
	var r kubeletplugin.PrepareResult
	for _, dev := range pc.Devices {
		r.Devices = append(r.Devices, kubeletplugin.Device{Requests: []string{dev.Request}, PoolName: dev.Pool,
			DeviceName: dev.Device, CDIDeviceIDs: []string{dev.CDIDeviceID}, ShareID: dev.ShareID})
	}
	return r
}

// prepare makes one claim's devices ready; held is what is prepared so far
// (the checkpoint plus this call's earlier claims).
func (d *Driver) prepare(c *resourceapi.ResourceClaim, held map[types.UID]PreparedClaim) (PreparedClaim, error) {
	pc := PreparedClaim{Namespace: c.Namespace, Name: c.Name}
	if c.Status.Allocation == nil {
		return pc, fmt.Errorf("not allocated")
	}
	alloc := c.Status.Allocation.Devices
	for _, r := range alloc.Results {
		if r.Driver != DriverName || r.Pool != d.cfg.NodeName {
			continue
		}
		a, ok := d.published.Devices[r.Device]
		if !ok {
			return pc, fmt.Errorf("device %s is not published by this node (published devices changed since allocation?)", r.Device)
		}
		if owner := inUse(held, r.Device, a.Shared); owner != "" {
			return pc, fmt.Errorf("device %s is already prepared for claim %s", r.Device, owner)
		}
		cfg, err := configFor(DriverName, alloc.Config, r.Request)
		if err != nil {
			return pc, err
		}
		dev := PreparedDevice{Request: r.Request, Pool: r.Pool, Device: r.Device, ShareID: r.ShareID, Kind: a.Kind,
			Profile: a.Profile, GPUUUID: a.GPUUUID, Start: a.Start, Dynamic: a.Dynamic, UUID: a.GPUUUID, Config: cfg}
		if a.MIGUUID != "" {
			dev.UUID = a.MIGUUID
		}
		if a.Shared {
			if q, ok := r.ConsumedCapacity["memory"]; ok {
				dev.MemoryMi = q.Value() >> 20
			}
			if q, ok := r.ConsumedCapacity["compute"]; ok {
				dev.ComputePercent = int(q.MilliValue() / 10)
			}
		}
		pc.Devices = append(pc.Devices, dev)
	}
	// Create dynamic partitions last, undoing them all if one fails.
	for i, dev := range pc.Devices {
		if !dev.Dynamic {
			continue
		}
		uuid, err := d.cfg.Partitioner.Create(dev.GPUUUID, dev.Profile, dev.Start)
		if err != nil {
			err = fmt.Errorf("create MIG %s at %d on %s: %w", dev.Profile, dev.Start, dev.GPUUUID, err)
			if e := d.destroyPartitions(pc.Devices[:i]); e != nil {
				err = fmt.Errorf("%w; and undoing: %v", err, e)
			}
			return pc, err
		}
		pc.Devices[i].UUID = uuid
	}
	ids, err := d.writeSpec(d.cdi, c.UID, pc.Devices)
	if err != nil {
		// The partitions made above must not outlive the failed prepare.
		if e := d.destroyPartitions(pc.Devices); e != nil {
			err = fmt.Errorf("%w; and undoing: %v", err, e)
		}
		return pc, err
	}
	for i := range pc.Devices {
		pc.Devices[i].CDIDeviceID = ids[i]
	}
	return pc, nil
}

// inUse names the claim that holds an exclusive device already.
func inUse(held map[types.UID]PreparedClaim, device string, shared bool) string {
	if shared {
		return ""
	}
	for _, pc := range held {
		for _, dev := range pc.Devices {
			if dev.Device == device {
				return pc.Namespace + "/" + pc.Name
			}
		}
	}
	return ""
}

// UnprepareResourceClaims undoes prepare; claims it does not know are
// done already. A claim leaves memory only once the checkpoint without it
// is on disk; if that write fails, the claim's devices are already freed
// and the retry only writes the checkpoint again.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	next := maps.Clone(d.prepared)
	var gone []types.UID
	for _, c := range claims {
		pc, ok := next[c.UID]
		if !ok {
			out[c.UID] = nil
			continue
		}
		if !d.tornDown[c.UID] {
			if err := d.teardown(c.UID, pc); err != nil {
				out[c.UID] = err
				continue
			}
			d.tornDown[c.UID] = true
		}
		delete(next, c.UID)
		gone = append(gone, c.UID)
		out[c.UID] = nil
	}
	if len(gone) > 0 {
		if err := d.store(d.ckpt, next); err != nil {
			for _, uid := range gone {
				out[uid] = fmt.Errorf("devices freed, but %w; retry", err)
			}
			return out, nil
		}
		d.prepared = next
		for _, uid := range gone {
			delete(d.tornDown, uid)
		}
	}
	return out, nil
}

// Prepared lists the checkpointed claims (for tests and debugging).
func (d *Driver) Prepared() map[types.UID]PreparedClaim {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]PreparedClaim, len(d.prepared))
	for k, v := range d.prepared {
		out[k] = v
	}
	return out
}

// deviceData is what the claim's device status tells users about a device.
type deviceData struct {
	UUID     string `json:"uuid"`
	Kind     string `json:"type"`
	Profile  string `json:"profile,omitempty"`
	MemoryMi int64  `json:"memoryLimitMi,omitempty"`
}

// reportStatus writes the devices' status onto the claim (server-side
// apply, so other drivers' entries stay). Failure is logged, not fatal:
// status is informative and the pod may start without it.
func (d *Driver) reportStatus(ctx context.Context, c *resourceapi.ResourceClaim, pc PreparedClaim) {
	st := resourceac.ResourceClaimStatus()
	devs := append([]PreparedDevice(nil), pc.Devices...)
	sort.Slice(devs, func(i, j int) bool { return devs[i].Device < devs[j].Device })
	for _, dev := range devs {
		raw, _ := json.Marshal(deviceData{UUID: dev.UUID, Kind: dev.Kind, Profile: dev.Profile, MemoryMi: dev.MemoryMi})
		ds := resourceac.AllocatedDeviceStatus().WithDriver(DriverName).WithPool(dev.Pool).WithDevice(dev.Device).
			WithData(runtime.RawExtension{Raw: raw}).
			WithConditions(metav1ac(metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared",
				Message: "prepared by " + DriverName + " on " + d.cfg.NodeName, ObservedGeneration: c.Generation}))
		if dev.ShareID != nil {
			ds = ds.WithShareID(string(*dev.ShareID))
		}
		st = st.WithDevices(ds)
	}
	ac := resourceac.ResourceClaim(c.Name, c.Namespace).WithStatus(st)
	if _, err := d.cfg.Client.ResourceV1().ResourceClaims(c.Namespace).ApplyStatus(ctx, ac,
		metav1.ApplyOptions{FieldManager: DriverName + "/" + d.cfg.NodeName, Force: true}); err != nil {
		klog.FromContext(ctx).Error(err, "update claim device status", "claim", klog.KObj(c))
	}
}

func metav1ac(c metav1.Condition) *metaac.ConditionApplyConfiguration {
	return metaac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
		WithMessage(c.Message).WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(metav1.Now())
}
