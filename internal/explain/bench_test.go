package explain

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// BenchmarkExplainClaim500x8 explains one claim against 500 nodes x 8
// H100s (4,000 devices) with half the nodes' GPUs allocated: a claim that
// fits, and one that fits nowhere (which adds the fixes).
func BenchmarkExplainClaim500x8(b *testing.B) {
	s := snapshotOf(b, "  nodePools:\n  - {name: h, profile: hgx-h100, count: 500}\n")
	for i := range 250 {
		c := claimOf(fmt.Sprint("hold-", i), "gpu.gpuplane.io", "", 8)
		var res []resourceapi.DeviceRequestAllocationResult
		for g := range 8 {
			res = append(res, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: drv, Pool: fmt.Sprint("h-", i), Device: fmt.Sprint("gpu-", g)})
		}
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: res}}
		s.Claims = append(s.Claims, c)
	}
	for _, tc := range []struct {
		name  string
		claim *resourceapi.ResourceClaim
		fits  bool
	}{
		{"fits", claimOf("q", "gpu.gpuplane.io", mem("40Gi"), 4), true},
		{"fits-nowhere", claimOf("q", "gpu.gpuplane.io", mem("100Gi"), 1), false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s.Claims = append(s.Claims, tc.claim)
			defer func() { s.Claims = s.Claims[:len(s.Claims)-1] }()
			for b.Loop() {
				rep, err := ExplainClaim(context.Background(), s, "default", "q")
				if err != nil || rep.Allocatable != tc.fits {
					b.Fatalf("%v %+v", err, rep)
				}
			}
		})
	}
}
