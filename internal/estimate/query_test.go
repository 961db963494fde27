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
