package explain

import (
	"context"
	"testing"
)

// BenchmarkCapacityLargeFleet counts one-GPU claims on 1,000 eight-GPU
// nodes, 8,000 placements: each placement should cost what its node's
// slices cost, not what the whole cluster's do.
func BenchmarkCapacityLargeFleet(b *testing.B) {
	s := snapshotOf(b, "  nodePools:\n  - {name: h, profile: hgx-h100, count: 1000}\n")
	spec := claimOf("t", "gpu.gpuplane.io", "", 1).Spec
	for b.Loop() {
		rep, err := Capacity(context.Background(), s, "t", spec, nil, 100000, nil)
		if err != nil || rep.Fits != 8000 {
			b.Fatalf("%v, %+v", err, rep)
		}
	}
}
