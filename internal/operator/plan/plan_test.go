package plan

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{{"", 0, false}, {"mean", 0, false}, {"p90", 90, false}, {"p99.9", 99.9, false}, {"p50", 50, false},
		{"90", 0, true}, {"p49", 0, true}, {"p100", 0, true}, {"pNaN", 0, true}, {"median", 0, true}} {
		got, err := Percentile(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("Percentile(%q) = %g, %v; want %g (error %v)", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "spec.slo.percentile") {
			t.Errorf("error %q does not name the field", err)
		}
	}
}

func spec() *v1alpha1.ServingDeploymentSpec {
	rate := resource.MustParse("500m")
	return &v1alpha1.ServingDeploymentSpec{
		Model:   v1alpha1.ModelSpec{Name: "Qwen/Qwen3-32B-FP8"},
		Engine:  v1alpha1.EngineSpec{Backend: "emulate", Precision: "fp8/bf16"},
		SLO:     v1alpha1.SLOSpec{TTFTMilliseconds: 500, ITLMilliseconds: 30, Percentile: "p90"},
		Traffic: v1alpha1.TrafficSpec{InputTokens: 4000, OutputTokens: 500, RequestsPerSecond: &rate},
	}
}

func TestRequest(t *testing.T) {
	pool := []configure.PoolEntry{{Device: "h100_sxm", Count: 8, GPUsPerNode: 8}}
	r, err := Request(spec(), pool, 6)
	if err != nil {
		t.Fatal(err)
	}
	if r.Backend != "vllm" || r.RequestRate != 0.5 || r.Pick != configure.LoadMatch || r.SLA.TTFTPercentile != 90 ||
		r.Precision != "fp8" || r.KVPrecision != "bf16" || r.MaxGPUs != 6 || r.ISL != 4000 {
		t.Errorf("request %+v", r)
	}
	s := spec()
	s.Traffic.RequestsPerSecond = resourcePtr("0")
	if _, err := Request(s, pool, 6); err == nil || !strings.Contains(err.Error(), "spec.traffic.requestsPerSecond") {
		t.Errorf("zero rate: %v", err)
	}
	if _, err := Request(spec(), nil, 0); err == nil || !strings.Contains(err.Error(), "no free device") {
		t.Errorf("empty pool: %v", err)
	}
	s = spec()
	s.Traffic.RequestsPerSecond, s.Traffic.Users = nil, 200
	if r, err := Request(s, pool, 8); err != nil || r.Concurrency != 200 || r.Pick != configure.LoadMatch {
		t.Errorf("users: %+v %v", r, err)
	}
}

func resourcePtr(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// The status plan is the search's best, with copies multiplied out.
func TestStatusFromSearch(t *testing.T) {
	params, err := perf.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: params}
	r, err := Request(spec(), []configure.PoolEntry{{Device: "h100_sxm", Count: 8, GPUsPerNode: 8}}, 8)
	if err != nil {
		t.Fatal(err)
	}
	res, err := configure.Search(env, r, configure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := Status(res)
	if p.Mode != res.Best.Mode || len(p.Pools) == 0 || p.Device != "h100_sxm" || !strings.HasSuffix(p.TTFT, "ms") {
		t.Fatalf("plan %+v from %+v", p, res.Best)
	}
	devices := 0
	for _, pool := range p.Pools {
		devices += int(pool.Workers * pool.TP)
	}
	if want := res.Best.Devices * max(res.Best.Copies, 1); devices != want {
		t.Errorf("plan %+v claims %d devices, the search's best %d", p, devices, want)
	}
	res.Best = nil
	res.Unreachable = &configure.Miss{Message: "SLO unreachable: x"}
	if u := Unmet(res); !strings.Contains(u, "SLO unreachable") {
		t.Errorf("Unmet %q", u)
	}
}

// spec.engine.speculative reaches the search; an acceptance length the
// tokens cannot reach is refused with the field named.
func TestRequestSpeculative(t *testing.T) {
	pool := []configure.PoolEntry{{Device: "h100_sxm", Count: 8, GPUsPerNode: 8}}
	s := spec()
	s.Engine.Speculative = &v1alpha1.SpeculativeSpec{Tokens: 3, AcceptanceLength: resource.MustParse("2.4")}
	r, err := Request(s, pool, 8)
	if err != nil || r.SpecTokens != 3 || r.SpecAccept != 2.4 {
		t.Errorf("speculative: %d / %g, %v", r.SpecTokens, r.SpecAccept, err)
	}
	s.Engine.Speculative.AcceptanceLength = resource.MustParse("5")
	if _, err := Request(s, pool, 8); err == nil || !strings.Contains(err.Error(), "spec.engine.speculative (tokens 3, acceptanceLength 5)") {
		t.Errorf("acceptance 5 of 3 tokens: %v", err)
	}
}
