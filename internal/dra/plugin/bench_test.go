package plugin_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

// BenchmarkPrepare measures the kubelet's view of a prepare: one gRPC
// NodePrepareResources for a claim of one GPU, with the claim read from the
// API (fake clientset), the CDI spec written, the checkpoint synced and the
// device status applied. Each claim is unprepared again outside the timer.
// Reports p50 and p99 besides the mean.
func BenchmarkPrepare(b *testing.B) {
	for _, tc := range []struct {
		name string
		f    slices.Features
		dev  string
	}{{"whole", slices.Features{}, "gpu-0"}, {"dynamic-mig", slices.Features{DynamicMIG: true}, "gpu-0-mig-3g-40gb-0"}} {
		b.Run(tc.name, func(b *testing.B) {
			r := newRig(b, "hgx-h100", tc.f)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				c := r.claim(fmt.Sprintf("bench-%d", i), "", dev(tc.dev))
				b.StartTimer()
				t0 := time.Now()
				res, err := r.kubelet.Prepare(ctx, c)
				lat = append(lat, time.Since(t0))
				b.StopTimer()
				if err != nil || res[string(c.UID)].Error != "" {
					b.Fatalf("prepare: %v %v", err, res)
				}
				if _, err := r.kubelet.Unprepare(ctx, c); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkBuildSlices lays out one HGX H100 node with dynamic MIG (8 GPUs,
// 208 devices, 8 counter sets): the work per node of fleet mode and of a
// health change.
func BenchmarkBuildSlices(b *testing.B) {
	n := nodeInventory(b, "hgx-h100")
	for b.Loop() {
		if _, err := slices.Build(n, slices.Features{DynamicMIG: true}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
