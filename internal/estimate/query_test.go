package estimate

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

func env() Env { return Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()} }

func TestRunModes(t *testing.T) {
	q := Defaults()
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Fits || out.Device != "h100_sxm" || out.Precision != "fp8" || out.KV != "bf16" || out.GPUs != 1 {
		t.Fatalf("default estimate: %+v", out)
	}
	q.Mode, q.TP, q.PrefillTP, q.DecodeTP, q.PrefillWorkers, q.DecodeWorkers = "disagg", 1, 1, 2, 2, 1
	d, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.GPUs != 4 || d.PrefillTP != 1 || d.DecodeTP != 2 || d.KVTransferMs <= 0 {
		t.Fatalf("disagg estimate: %+v", d)
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		mut  func(*Query)
		want string
	}{
		{func(q *Query) { q.Mode = "split" }, "not agg or disagg"},
		{func(q *Query) { q.PrefillTP = 2 }, "only with mode disagg"},
		{func(q *Query) { q.Precision = "int3" }, "precision"},
		{func(q *Query) { q.KVPrecision = "fp2" }, "kv_precision"},
		{func(q *Query) { q.Slice = "9g.99gb" }, "unknown MIG profile"},
		{func(q *Query) { q.ISL = -1 }, "isl"},
		{func(q *Query) { q.Harness = "open-loop" }, "harness: \"open-loop\" is not a harness; use one of steady, burst, queued"},
		{func(q *Query) { q.Harness, q.RequestsPerUser = "burst", 1 }, "requests_per_user: 1; use at least 2"},
	}
	for _, tc := range cases {
		q := Defaults()
		tc.mut(&q)
		_, err := Run(env(), q, serving.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestNotFittingKeepsTheMemoryPlan(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.Precision = "meta-llama/Llama-3.1-70B", "a10", "bf16"
	out, err := Run(env(), q, serving.Options{})
	var fe *perf.FitError
	if !errors.As(err, &fe) || out == nil || out.Fits || out.Memory == nil {
		t.Fatalf("want a FitError with the plan, got %v %+v", err, out)
	}
	if !strings.Contains(err.Error(), "smallest fitting") {
		t.Fatalf("no suggestion: %v", err)
	}
}

func TestMaxConcurrencyMatchesEstimate(t *testing.T) {
	q := Defaults()
	n, err := MaxConcurrency(env(), q)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := Run(env(), q, serving.Options{})
	if n != out.MaxConcurrency {
		t.Fatalf("MaxConcurrency %d, estimate says %d", n, out.MaxConcurrency)
	}
}

// A query's harness reaches the simulation: the opening burst raises mean
// TTFT, a queued client raises it further, and the engine's TPOT and
// throughput are the same under all three.
func TestRunHarness(t *testing.T) {
	ttft := map[string]float64{}
	var tpot float64
	for _, h := range []string{"", "burst", "queued"} {
		q := Defaults()
		q.Harness = h
		out, err := Run(env(), q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := h
		if h == "" {
			want = "steady"
		}
		if out.Harness != want {
			t.Fatalf("harness %q echoed as %q, want %q", h, out.Harness, want)
		}
		ttft[out.Harness] = out.TTFTms
		if h == "" {
			tpot = out.TPOTms
		} else if out.TPOTms < 0.8*tpot || out.TPOTms > 1.2*tpot {
			t.Errorf("%s: TPOT %.2f ms strays from steady %.2f ms", h, out.TPOTms, tpot)
		}
	}
	if !(ttft["steady"] < ttft["burst"] && ttft["burst"] < ttft["queued"]) {
		t.Fatalf("mean TTFT should rise steady < burst < queued: %v", ttft)
	}
}
