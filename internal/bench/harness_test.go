package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/emulate/emulatetest"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// bench --users N fires every user at once and measures every request,
// which is the burst harness. Against an emulated worker (the same engine,
// in real time) its mean TTFT must match `estimate --harness burst` better
// than the steady harness (no opening burst) or the queued one (one
// completion gap more). Sizes vary as real traffic does: the burst harness
// assumes users drift apart after the opening burst. With identical
// requests a deterministic engine keeps them in cohorts that prefill
// together every round, and TTFT lies between burst and a burst every round.
func TestUsersMeasureLikeTheBurstHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an emulated worker in real time for a few seconds")
	}
	url, _ := emulatetest.Start(t, "agg")
	const users, perUser, isl, osl = 8, 3, 3000, 128
	s, _, err := Run(context.Background(), Options{URL: url, Model: "m", Users: users, Requests: users * perUser,
		ISL: workload.Normal{Mean: isl, Std: isl / 5, Max: 2 * isl}, OSL: workload.Normal{Mean: osl, Std: osl / 4, Max: 2 * osl}, Duration: time.Minute, RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != users*perUser || s.Failed != 0 {
		t.Fatalf("bench: %d requests, %d failed", s.Requests, s.Failed)
	}
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}
	miss := map[serving.Harness]float64{}
	for _, h := range serving.Harnesses {
		q := estimate.Defaults()
		q.Model, q.GPU, q.TP = "Qwen/Qwen3-8B", "h100_sxm", 1
		q.ISL, q.OSL, q.Concurrency, q.Harness, q.RequestsPerUser = isl, osl, users, string(h), perUser
		out, err := estimate.Run(env, q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		miss[h] = math.Abs(s.TTFT.Mean-out.TTFTms) / out.TTFTms
		t.Logf("%-6s estimate TTFT %6.1f ms; bench measured %6.1f ms (%+.0f%%)", h, out.TTFTms, s.TTFT.Mean, 100*(s.TTFT.Mean-out.TTFTms)/out.TTFTms)
	}
	if miss[serving.Burst] > 0.3 || miss[serving.Burst] >= miss[serving.Steady] || miss[serving.Burst] >= miss[serving.Queued] {
		t.Fatalf("bench's mean TTFT should match the burst harness best, within 30%%: relative misses %v", miss)
	}
}
