package plugin

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
)

// Restorer is a partitioner that can take back the partitions a checkpoint
// says exist, so that a restarted plugin still refuses overlapping ones.
type Restorer interface {
	Restore(gpuUUID, profile string, start int) error
}

// reconcile compares the checkpoint with what discovery sees, once at
// start: checkpointed dynamic partitions are handed back to the
// partitioner, and partitions on the node that no checkpointed claim
// holds are reported as orphans (left by a crash between creating one and
// writing the checkpoint) with how to remove them.
func (d *Driver) reconcile(ctx context.Context) {
	log := klog.FromContext(ctx)
	held := map[string]bool{}
	for uid, pc := range d.prepared {
		for _, dev := range pc.Devices {
			if !dev.Dynamic {
				continue
			}
			held[partitionKey(dev.GPUUUID, dev.Profile, dev.Start)] = true
			if r, ok := d.cfg.Partitioner.(Restorer); ok {
				if err := r.Restore(dev.GPUUUID, dev.Profile, dev.Start); err != nil {
					log.Error(err, "checkpointed MIG partition cannot be restored", "claim", uid, "gpu", dev.GPUUUID, "profile", dev.Profile, "start", dev.Start)
				}
			}
		}
	}
	if !d.cfg.Features.DynamicMIG {
		return
	}
	for _, g := range d.inv.GPUs {
		if g.MIG == nil {
			continue
		}
		for _, in := range g.MIG.Instances {
			if held[partitionKey(g.UUID, in.Profile, in.Start)] {
				continue
			}
			o := fmt.Sprintf("MIG %s at %d on %s (%s)", in.Profile, in.Start, g.UUID, in.UUID)
			d.orphans = append(d.orphans, o)
			log.Info("orphaned MIG partition: no prepared claim holds it; destroy it (nvidia-smi mig -dci/-dgi) or it keeps its memory slices",
				"partition", o)
		}
	}
}

func partitionKey(gpu, profile string, start int) string {
	return fmt.Sprintf("%s/%s/%d", gpu, profile, start)
}

// Orphans lists the partitions found at start that no claim holds.
func (d *Driver) Orphans() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.orphans...)
}
