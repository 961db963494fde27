package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/emulate/emulatetest"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// TestGapSampleExactWhileSmall holds the sample to the plain percentiles
// of every gap while the run has streamed no more than it keeps.
func TestGapSampleExactWhileSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := newGapSample(1000, 1)
	var all []float64
	for range 40 {
		xs := make([]float64, rng.IntN(20))
		for i := range xs {
			xs[i] = rng.ExpFloat64() * 0.01
		}
		g.add(xs)
		all = append(all, xs...)
	}
	got, want := g.percentiles(), percentiles(all)
	for _, d := range []float64{got.Mean - want.Mean, got.P50 - want.P50, got.P90 - want.P90, got.P99 - want.P99, got.Max - want.Max} {
		if math.Abs(d) > 1e-9 {
			t.Fatalf("sample %+v, every gap %+v", got, want)
		}
	}
}

// TestGapSampleBoundsMemory streams 50 times the sample's size: it keeps
// no more than its size, the mean and maximum stay exact, and the
// quantiles of a uniform stream land within a point of the truth.
func TestGapSampleBoundsMemory(t *testing.T) {
	const size = 2000
	g := newGapSample(size, 7)
	rng := rand.New(rand.NewPCG(5, 6))
	var sum, mx float64
	n := 0
	for range 1000 {
		xs := make([]float64, 100)
		for i := range xs {
			xs[i] = rng.Float64()
			sum += xs[i]
			mx = math.Max(mx, xs[i])
		}
		n += len(xs)
		g.add(xs)
	}
	if len(g.kept) != size {
		t.Fatalf("kept %d gaps, want %d", len(g.kept), size)
	}
	p := g.percentiles()
	if math.Abs(p.Mean-sum/float64(n)*1000) > 1e-6 || p.Max != mx*1000 {
		t.Errorf("mean %g max %g, want %g and %g", p.Mean, p.Max, sum/float64(n)*1000, mx*1000)
	}
	for _, q := range []struct{ got, want float64 }{{p.P50, 500}, {p.P90, 900}, {p.P99, 990}} {
		if math.Abs(q.got-q.want) > 30 {
			t.Errorf("quantile %g ms, want about %g", q.got, q.want)
		}
	}
}

// TestRunStopsAtItsRecordLimit lowers the limit on what one run records
// and checks that a closed-loop run ends there and says why.
func TestRunStopsAtItsRecordLimit(t *testing.T) {
	url, _ := emulatetest.Start(t, "agg")
	defer func(n int64) { maxRecords = n }(maxRecords)
	maxRecords = 4
	s, recs, err := Run(context.Background(), Options{URL: url, Model: "m", Users: 1, ISL: workload.Fixed{N: 50}, OSL: workload.Fixed{N: 3},
		Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 4 || len(recs) != 4 || !strings.Contains(s.Stopped, "stopped at 4 requests") {
		t.Fatalf("run of %d requests (%d records), stopped %q", s.Requests, len(recs), s.Stopped)
	}
	if _, _, err := Run(context.Background(), Options{URL: url, Model: "m", Rate: 10, ISL: workload.Fixed{N: 50}, OSL: workload.Fixed{N: 3},
		Duration: time.Second}); err == nil || !strings.Contains(err.Error(), "more than the 4 one run records") {
		t.Errorf("an open-loop run past the limit: %v", err)
	}
}

// TestRunGivesUpOnADeadServer lowers the failures a run tolerates with
// nothing answered and checks that closed-loop users stop there instead
// of spinning until --duration.
func TestRunGivesUpOnADeadServer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"down"}}`, http.StatusServiceUnavailable)
	}))
	defer ts.Close()
	defer func(n int64) { deadServerFailures = n }(deadServerFailures)
	deadServerFailures = 20
	start := time.Now()
	s, _, err := Run(context.Background(), Options{URL: ts.URL, Model: "m", Users: 3, ISL: workload.Fixed{N: 5}, OSL: workload.Fixed{N: 2},
		Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if s.Failed < 20 || s.Failed > 22 || s.Succeeded != 0 || !strings.Contains(s.Stopped, "all failed") || time.Since(start) > 30*time.Second {
		t.Fatalf("%d failed, %d succeeded, stopped %q after %s", s.Failed, s.Succeeded, s.Stopped, time.Since(start))
	}
}
