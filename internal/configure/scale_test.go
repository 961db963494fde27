package configure

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/serving"
)

// The search's work follows device kinds and parallelisms, not counts:
// a 1,000-device pool costs about as many engine simulations as a
// 100-device pool of the same kinds.
func TestSearchCostDoesNotGrowWithDevices(t *testing.T) {
	small := mustSearch(t, pool1000(100))
	large := mustSearch(t, pool1000(1000))
	t.Logf("simulations: %d at 100 devices, %d at 1,000", small.Simulations, large.Simulations)
	if large.Simulations > 2*small.Simulations {
		t.Errorf("%d simulations at 1,000 devices against %d at 100", large.Simulations, small.Simulations)
	}
	if large.Best == nil || !large.Best.MeetsSLO || large.Best.GPUs < 5*small.Best.GPUs {
		t.Fatalf("the 1,000-device pick %+v should meet the SLO on far more GPUs than the 100-device one", large.Best)
	}
}

// A replicated deployment's unit stands for the whole: simulating all of
// its workers at once gives the same latencies and throughput.
func TestReplicatedUnitMatchesWholeSimulation(t *testing.T) {
	r := reference()
	r.Pool = []PoolEntry{{Device: "h100_sxm", Count: 256}}
	res := mustSearch(t, r)
	var c *Config
	for i := range res.Candidates {
		if x := &res.Candidates[i]; x.Mode == "disagg" && x.MeetsSLO && x.Copies > 1 {
			c = x
			break
		}
	}
	if c == nil {
		t.Fatal("no replicated disaggregated candidate on 256 H100s")
	}
	env := testEnv()
	s := &search{env: env, r: &r}
	kinds, engines, err := resolve(env, s.r)
	if err != nil {
		t.Fatal(err)
	}
	s.kinds, s.engines = kinds, engines
	find := func(role string, p *Pool) *engine {
		for _, e := range engines {
			if e.role == role && e.tp == p.TP && e.deviceName() == p.Device && e.err == nil {
				return e
			}
		}
		t.Fatalf("no %s engine %s tp%d", role, p.Device, p.TP)
		return nil
	}
	whole, err := serving.Disaggregated(serving.Disagg{Prefill: find("prefill", c.Prefill).w, Decode: find("decode", c.Decode).w,
		PrefillWorkers: c.Prefill.Workers, DecodeWorkers: c.Decode.Workers}, serving.Workload{ISL: r.ISL, OSL: r.OSL, Concurrency: c.Concurrency}, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s at %d users: unit TTFT %.0f ms ITL %.1f ms %.0f tok/s; whole TTFT %.0f ms ITL %.1f ms %.0f tok/s",
		Describe(*c), c.Concurrency, c.TTFTMeanms, c.ITLMeanms, c.TokensPerS, whole.TTFTms, whole.TPOTms, whole.OutputTokensPerS)
	rel := func(a, b float64) float64 { return math.Abs(a-b) / b }
	if rel(c.TokensPerS, whole.OutputTokensPerS) > 0.05 || rel(c.ITLMeanms, whole.TPOTms) > 0.05 || rel(c.TTFTMeanms, whole.TTFTms) > 0.15 {
		t.Error("the replicated unit does not stand for the whole deployment")
	}
}

// Deployments count the GPUs their slices occupy: two 3g.40gb fill an
// H100, an odd one strands the other half, and tokens/s per GPU is over those.
func TestPhysicalAccounting(t *testing.T) {
	r := reference()
	r.Model = "Qwen/Qwen3-8B"
	r.Pool = []PoolEntry{{Device: "h100_sxm:3g.40gb", Count: 5}}
	r.Modes = []string{"agg"}
	res := mustSearch(t, r)
	for _, c := range res.Candidates {
		want := float64((c.Agg.Workers + 1) / 2)
		if c.GPUs != want {
			t.Errorf("%s occupies %g GPUs, want %g", Describe(c), c.GPUs, want)
		}
		if c.GPUEquivalents >= c.GPUs && c.Agg.Workers%2 == 1 {
			t.Errorf("%s: %g GPU equivalents should be below the %g GPUs occupied", Describe(c), c.GPUEquivalents, c.GPUs)
		}
		if math.Abs(c.TokensPerSPerGPU-c.TokensPerS/c.GPUs) > 1e-6 {
			t.Errorf("%s: %g tokens/s per GPU is not over the GPUs occupied", Describe(c), c.TokensPerSPerGPU)
		}
	}
}
