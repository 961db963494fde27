package configure

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

func testEnv() Env { return Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()} }

// reference is the benchmark search.
func reference() Request {
	return Request{Model: "Qwen/Qwen3-32B", Precision: "fp8", Backend: "vllm", ISL: 4000, OSL: 500,
		SLA: SLA{TTFTms: 500, ITLms: 30}, Pool: []PoolEntry{{Device: "h200_sxm", Count: 8}}}
}

func mustSearch(t testing.TB, r Request) *Result {
	t.Helper()
	res, err := Search(testEnv(), r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestReferenceSearch(t *testing.T) {
	res := mustSearch(t, reference())
	b := res.Best
	if b == nil || !b.MeetsSLO {
		t.Fatalf("best %+v should meet the SLO", b)
	}
	if b.TTFTms > 500 || b.ITLms > 30 {
		t.Errorf("best TTFT %.1f ms / ITL %.2f ms outside the SLO", b.TTFTms, b.ITLms)
	}
	if b.GPUs > 8 || b.Devices > 8 {
		t.Errorf("best uses %.1f GPUs of 8", b.GPUs)
	}
	if res.CandidatesEvaluated < 20 || res.Simulations < 20 {
		t.Errorf("only %d candidates / %d simulations", res.CandidatesEvaluated, res.Simulations)
	}
	if len(res.Pareto) == 0 || len(res.Candidates) == 0 {
		t.Fatal("no Pareto front or candidates")
	}
	modes := map[string]bool{}
	for i, c := range res.Candidates {
		modes[c.Mode] = true
		if c.Rank != i+1 {
			t.Errorf("candidate %d has rank %d", i, c.Rank)
		}
		if i > 0 && c.MeetsSLO && c.TokensPerSPerGPU > res.Candidates[i-1].TokensPerSPerGPU+1e-9 {
			t.Errorf("rank %d (%.1f tok/s/GPU) above rank %d (%.1f)", c.Rank, c.TokensPerSPerGPU, i, res.Candidates[i-1].TokensPerSPerGPU)
		}
		if c.Binding == "" || (i > 0 && c.Why == "") {
			t.Errorf("rank %d not explained: binding %q why %q", c.Rank, c.Binding, c.Why)
		}
	}
	if !modes["agg"] || !modes["disagg"] {
		t.Errorf("candidates should cover both modes, got %v", modes)
	}
	if len(res.Explain) < 3 || !strings.Contains(res.Explain[0], "wins") {
		t.Errorf("explanation %q", res.Explain)
	}
	checkDecodeStepLine(t, res)
}

// checkDecodeStepLine holds the winner's decode-step line to its
// definition: a batch no larger than the pool's, parts that make the step.
func checkDecodeStepLine(t *testing.T, res *Result) {
	t.Helper()
	if len(res.Explain) < 2 {
		t.Fatalf("explanation %q", res.Explain)
	}
	line := res.Explain[1]
	var ms float64
	var n int
	if _, err := fmt.Sscanf(line, "#1's decode step is %f ms at %d sequences an engine:", &ms, &n); err != nil {
		t.Fatalf("second line %q: %v", line, err)
	}
	pool := res.Best.Decode
	if pool == nil {
		pool = res.Best.Agg
	}
	if ms <= 0 || n < 1 || n > pool.Batch {
		t.Errorf("%q: batch %d of a pool at %d", line, n, pool.Batch)
	}
	sum := 0
	for _, f := range strings.Split(strings.TrimSuffix(line[strings.Index(line, ": ")+2:], "."), ", ") {
		var name string
		var pct int
		if _, err := fmt.Sscanf(f, "%s %d%%", &name, &pct); err != nil {
			t.Fatalf("part %q of %q: %v", f, line, err)
		}
		sum += pct
	}
	if sum < 97 || sum > 102 {
		t.Errorf("%q: parts sum to %d%%", line, sum)
	}
	if st := res.Best.DecodeStep; st == nil || math.Abs(st.Ms-ms) > 0.05 || st.Sequences != n {
		t.Errorf("%q: the winner's decode_step is %+v", line, st)
	}
	checkDecodeSteps(t, res)
}

// checkDecodeSteps holds every candidate's decode_step to its definition:
// present, parts that sum to the step, a batch within the pool's.
func checkDecodeSteps(t *testing.T, res *Result) {
	t.Helper()
	for _, c := range res.Candidates {
		st := c.DecodeStep
		if st == nil {
			t.Errorf("#%d %s has no decode_step", c.Rank, Describe(c))
			continue
		}
		pool := c.Decode
		if pool == nil {
			pool = c.Agg
		}
		sum := 0.0
		for _, v := range st.PartsMs {
			sum += v
		}
		if st.Ms <= 0 || math.Abs(sum-st.Ms) > 1e-9*st.Ms || st.Sequences < 1 || st.Sequences > pool.Batch || st.Context <= 0 {
			t.Errorf("#%d %s: decode_step %+v (parts sum to %g), pool batch %d", c.Rank, Describe(c), st, sum, pool.Batch)
		}
	}
}

// The numbers configure reports are what `gpuplane estimate` says of the
// same deployment at the same concurrency.
func TestBestAgreesWithEstimate(t *testing.T) {
	for _, mode := range []string{"agg", "disagg"} {
		r := reference()
		r.Modes = []string{mode}
		b := mustSearch(t, r).Best
		q := estimate.Query{Model: r.Model, GPU: "h200_sxm", Precision: r.Precision, Backend: r.Backend, Mode: mode,
			ISL: r.ISL, OSL: r.OSL, Concurrency: b.Concurrency}
		if mode == "agg" {
			q.TP, q.Workers = b.Agg.TP, b.Agg.Workers
		} else {
			q.PrefillTP, q.DecodeTP, q.PrefillWorkers, q.DecodeWorkers = b.Prefill.TP, b.Decode.TP, b.Prefill.Workers, b.Decode.Workers
		}
		out, err := estimate.Run(testEnv(), q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(out.TTFTms-b.TTFTms) > 1e-6*b.TTFTms || math.Abs(out.TPOTms-b.ITLms) > 1e-6*b.ITLms ||
			math.Abs(out.OutputTokensPerS-b.TokensPerS) > 1e-6*b.TokensPerS {
			t.Errorf("%s: configure TTFT %.3f ITL %.3f tok/s %.1f, estimate %.3f %.3f %.1f", mode, b.TTFTms, b.ITLms, b.TokensPerS,
				out.TTFTms, out.TPOTms, out.OutputTokensPerS)
		}
	}
}

func TestUnreachableSLOStillAnswers(t *testing.T) {
	r := reference()
	r.SLA = SLA{TTFTms: 20, ITLms: 2}
	res := mustSearch(t, r)
	if res.Unreachable == nil {
		t.Fatal("want an unreachable report")
	}
	if res.Unreachable.BestTTFTms <= 20 || res.Unreachable.BestITLms <= 2 {
		t.Errorf("best achievable %+v should miss the targets", res.Unreachable)
	}
	if !strings.Contains(res.Unreachable.Message, "TTFT") || !strings.Contains(res.Unreachable.Message, "% over") {
		t.Errorf("message %q should say how far TTFT misses", res.Unreachable.Message)
	}
	if res.Best == nil || len(res.Candidates) == 0 {
		t.Fatal("an unreachable SLO still gets a best effort and a table")
	}
	if res.Best.MeetsSLO {
		t.Error("best cannot meet an unreachable SLO")
	}
	for i := 1; i < len(res.Candidates); i++ {
		if v0, v1 := worst(r.SLA, res.Candidates[i-1]), worst(r.SLA, res.Candidates[i]); v1 < v0-1e-9 {
			t.Errorf("candidates not ordered by closeness: %.3f after %.3f", v1, v0)
		}
	}
}

func worst(s SLA, c Config) float64 { return math.Max(c.TTFTms/s.TTFTms, c.ITLms/s.ITLms) }

func TestLoadMatchUsesFewestGPUs(t *testing.T) {
	r := reference()
	r.Pool[0].Count = 16
	r.Pick, r.RequestRate, r.Modes = LoadMatch, 3, []string{"agg"}
	res := mustSearch(t, r)
	b := res.Best
	if !b.MeetsSLO || b.RequestsPerS < 0.97*r.RequestRate {
		t.Fatalf("best %s serves %.2f req/s (want %.2f) meets=%v", Describe(*b), b.RequestsPerS, r.RequestRate, b.MeetsSLO)
	}
	// Oracle: one worker fewer of the same engine cannot carry the rate inside the SLO.
	if b.Agg.Workers > 1 {
		w := b.Agg.Workers - 1
		if capRate := float64(w) * b.Agg.CapacityRPS; capRate >= r.RequestRate {
			t.Errorf("%d workers of %.2f req/s would already carry %.2f req/s", w, b.Agg.CapacityRPS, r.RequestRate)
		}
	}
	for _, c := range res.Candidates[1:] {
		if c.MeetsSLO && c.GPUs < b.GPUs {
			t.Errorf("%s meets the SLO on %.0f GPUs, fewer than the best's %.0f", Describe(c), c.GPUs, b.GPUs)
		}
	}
	full := mustSearch(t, Request{Model: r.Model, Precision: r.Precision, ISL: r.ISL, OSL: r.OSL, SLA: r.SLA, Pool: r.Pool, Modes: r.Modes})
	if b.GPUs >= full.Best.GPUs {
		t.Errorf("load-match for 3 req/s uses %.0f GPUs, as many as the throughput pick's %.0f", b.GPUs, full.Best.GPUs)
	}
}

func TestAutoscalePicksUnits(t *testing.T) {
	r := reference()
	r.Pick, r.RequestRate = Autoscale, 4
	res := mustSearch(t, r)
	if res.Engines == nil || res.Engines.Prefill == nil || res.Engines.Decode == nil {
		t.Fatal("autoscale must name a prefill and a decode engine")
	}
	if res.Best.Mode != "disagg" || res.Best.Prefill.TP != res.Engines.Prefill.TP || res.Best.Decode.TP != res.Engines.Decode.TP {
		t.Errorf("best %s should be built from the chosen engines", Describe(*res.Best))
	}
	if res.Engines.Prefill.CapacityRPS <= 0 || res.Engines.Decode.CapacityRPS <= 0 {
		t.Errorf("engine capacities %+v %+v", res.Engines.Prefill, res.Engines.Decode)
	}
}

func TestPricesRankPerDollar(t *testing.T) {
	r := Request{Model: "Qwen/Qwen3-8B", Precision: "fp8", ISL: 2000, OSL: 300, SLA: SLA{TTFTms: 800, ITLms: 40}, Modes: []string{"agg"},
		Pool: []PoolEntry{{Device: "h100_sxm", Count: 4, PricePerHour: 10}, {Device: "l40s", Count: 4, PricePerHour: 0.5}}}
	res := mustSearch(t, r)
	if !strings.HasPrefix(res.Best.Agg.Device, "l40s") {
		t.Errorf("at a twentieth of the price the L40S should win per dollar, got %s", Describe(*res.Best))
	}
	for i := 1; i < len(res.Candidates); i++ {
		if a, b := res.Candidates[i-1], res.Candidates[i]; a.MeetsSLO && b.MeetsSLO && b.TokensPerDollar > a.TokensPerDollar+1e-6 {
			t.Errorf("rank %d has more tokens per dollar than rank %d", b.Rank, a.Rank)
		}
	}
	r.Pool[0].PricePerHour, r.Pool[1].PricePerHour = 0, 0
	if res := mustSearch(t, r); !strings.HasPrefix(res.Best.Agg.Device, "h100_sxm") {
		t.Errorf("without prices the faster H100 should win per GPU, got %s", Describe(*res.Best))
	}
}

// Fractional devices take part: a pool of MIG and vGPU slices only still
// yields a deployment, counted in GPU equivalents.
func TestSlicesOnlyPool(t *testing.T) {
	r := Request{Model: "Qwen/Qwen3-8B", Precision: "fp8", ISL: 1000, OSL: 200, SLA: SLA{TTFTms: 1500, ITLms: 60},
		Pool: []PoolEntry{{Device: "h100_sxm:3g.40gb", Count: 4}, {Device: "a10:1/2", Count: 6}}}
	res := mustSearch(t, r)
	if !res.Best.MeetsSLO {
		t.Fatalf("best %s misses", Describe(*res.Best))
	}
	if res.Best.GPUs >= float64(res.Best.Devices) {
		t.Errorf("%.2f GPU equivalents for %d slices", res.Best.GPUs, res.Best.Devices)
	}
}

func TestParetoFrontIsNonDominated(t *testing.T) {
	res := mustSearch(t, reference())
	for _, p := range res.Pareto {
		if p.TTFTms > 500 {
			t.Errorf("front point %s misses TTFT", p.Label)
		}
		for _, o := range res.Curve {
			if o.TTFTms <= 500 && o.TokensPerSPerGPU > p.TokensPerSPerGPU && o.TokensPerSPerUser > p.TokensPerSPerUser {
				t.Errorf("%s dominates front point %s", o.Label, p.Label)
			}
		}
	}
	for i := 1; i < len(res.Pareto); i++ {
		if res.Pareto[i].TokensPerSPerGPU < res.Pareto[i-1].TokensPerSPerGPU {
			t.Errorf("front not monotone at %d", i)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Request)
		want string
	}{
		{"unknown model", func(r *Request) { r.Model = "Qwen/Qwen3-33B" }, "model"},
		{"unknown device", func(r *Request) { r.Pool[0].Device = "h300" }, "pool[0].device"},
		{"bad pick", func(r *Request) { r.Pick = "fastest" }, "pick"},
		{"load-match without load", func(r *Request) { r.Pick = LoadMatch }, "requestRate"},
		{"no SLA", func(r *Request) { r.SLA = SLA{} }, "sla"},
		{"zero count", func(r *Request) { r.Pool[0].Count = 0 }, "pool[0].count"},
		{"duplicate device", func(r *Request) { r.Pool = append(r.Pool, r.Pool[0]) }, "listed twice"},
		{"partial prices", func(r *Request) {
			r.Pool = []PoolEntry{{Device: "h200_sxm", Count: 8, PricePerHour: 3}, {Device: "l40s", Count: 4}}
		}, "prices"},
		{"osl 1", func(r *Request) { r.OSL = 1 }, "osl"},
		{"two loads", func(r *Request) { r.RequestRate, r.Concurrency = 1, 2 }, "not both"},
		{"bad mode", func(r *Request) { r.Modes = []string{"hybrid"} }, "modes"},
		{"node past the bound", func(r *Request) { r.Pool[0].GPUsPerNode = MaxGPUsPerNode + 1 }, "pool[0].gpusPerNode: 1025 must be 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := reference()
			tc.edit(&r)
			_, err := Search(testEnv(), r, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to name %q", err, tc.want)
			}
		})
	}
}

// A budget that no deployment fits is named in the miss, with the fix.
func TestBudgetUnderEveryDeployment(t *testing.T) {
	r := reference()
	r.MaxGPUs = 0.5
	res, err := Search(testEnv(), r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unreachable == nil || !strings.Contains(res.Unreachable.Message, "maxGpus 0.5") || !strings.Contains(res.Unreachable.Message, "raise the budget") {
		t.Errorf("want the budget named in the miss, got %+v", res.Unreachable)
	}
}

// A model no device in the pool holds is an error, not an empty table.
func TestNothingFits(t *testing.T) {
	r := reference()
	r.Model = "meta-llama/Llama-3.1-70B"
	r.Precision = "bf16"
	r.Pool = []PoolEntry{{Device: "a10", Count: 2}}
	_, err := Search(testEnv(), r, Options{})
	if err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("want a fit error, got %v", err)
	}
}

// A percentile SLO is judged on that percentile of the whole deployment's
// engine simulation, and the result says which statistic it judged.
func TestPercentileSLO(t *testing.T) {
	mean := mustSearch(t, reference())
	r := reference()
	r.SLA.TTFTPercentile, r.SLA.ITLPercentile = 99, 90
	p := mustSearch(t, r)
	if p.Judged != "ttft p99, itl p90" || mean.Judged != "ttft mean, itl mean" {
		t.Errorf("judged %q and %q", p.Judged, mean.Judged)
	}
	for _, c := range p.Candidates {
		if !c.MeetsSLO {
			continue
		}
		if c.TTFTms != c.TTFTP99ms || c.TTFTP99ms > 500 || c.ITLP90ms > 30 || c.ITLms != c.ITLP90ms {
			t.Errorf("%s meets the SLO with TTFT p99 %.0f ms (shown %.0f), ITL p90 %.1f ms (shown %.1f)",
				Describe(c), c.TTFTP99ms, c.TTFTms, c.ITLP90ms, c.ITLms)
		}
	}
	if p.Best == nil || !p.Best.MeetsSLO {
		t.Fatal("nothing meets the p99 SLO on 8 H200s")
	}
	if p.Best.TTFTP99ms > 500 {
		t.Errorf("p99 pick has TTFT p99 %.0f ms > 500", p.Best.TTFTP99ms)
	}
	for _, bad := range []float64{-1, 10, 100, math.NaN()} {
		r := reference()
		r.SLA.TTFTPercentile = bad
		if _, err := Search(testEnv(), r, Options{}); err == nil || !strings.Contains(err.Error(), "sla.ttftPercentile") {
			t.Errorf("ttftPercentile %g: got %v", bad, err)
		}
	}
}

// A miss is stated in finite numbers whatever the modes searched.
func TestUnreachableNeverInfinite(t *testing.T) {
	r := reference()
	r.Modes, r.SLA.E2Ems = []string{"disagg"}, 100
	res := mustSearch(t, r)
	if res.Unreachable == nil || strings.Contains(res.Unreachable.Message, "Inf") || !strings.Contains(res.Unreachable.Message, "best E2E") {
		t.Errorf("unreachable: %+v", res.Unreachable)
	}
}

func TestSearchRefusesUnboundedLoads(t *testing.T) {
	for name, edit := range map[string]func(r *Request){
		"requestRate": func(r *Request) { r.Pick, r.RequestRate = LoadMatch, 1e12 },
		"concurrency": func(r *Request) { r.Pick, r.Concurrency = LoadMatch, 1<<40 },
		"count":       func(r *Request) { r.Pool[0].Count = 1e9 },
		"budget":      func(r *Request) { r.MaxGPUs = math.NaN() },
	} {
		r := reference()
		edit(&r)
		if _, err := Search(testEnv(), r, Options{}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// A request longer than the model's context is searched with a note that
// says so; the reference request gets none.
func TestSearchNotesContext(t *testing.T) {
	if res := mustSearch(t, reference()); len(res.Notes) != 0 {
		t.Errorf("reference request: notes %q, want none", res.Notes)
	}
	r := reference()
	r.ISL, r.OSL = 40000, 1000
	res := mustSearch(t, r)
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "isl + osl = 41000 tokens exceeds Qwen/Qwen3-32B's context of 40960") {
		t.Errorf("isl 40000 + osl 1000: notes %q, want the context named", res.Notes)
	}
}

// For a MoE model the search also tries attention-DP workers (ranks of
// one GPU, the experts over all of them), and a dp candidate's figures
// are the estimate's for the same deployment: the search counts a
// worker's ranks as the estimate does.
func TestAttentionDPCandidatesAgreeWithEstimate(t *testing.T) {
	r := Request{Model: "deepseek-ai/DeepSeek-R1", Precision: "fp4", Backend: "vllm", ISL: 1024, OSL: 256,
		SLA: SLA{TTFTms: 2000, ITLms: 50}, Pool: []PoolEntry{{Device: "b200_sxm", Count: 8}}}
	for _, mode := range []string{"agg", "disagg"} {
		r.Modes = []string{mode}
		res := mustSearch(t, r)
		var c *Config
		for i := range res.Candidates {
			x := &res.Candidates[i]
			if x.Agg != nil && x.Agg.DP > 1 || x.Decode != nil && x.Decode.DP > 1 {
				c = x
				break
			}
		}
		if c == nil {
			t.Fatalf("%s: no attention-DP candidate among %d", mode, len(res.Candidates))
		}
		q := estimate.Query{Model: r.Model, GPU: "b200_sxm", Precision: r.Precision, Backend: r.Backend, Mode: mode,
			ISL: r.ISL, OSL: r.OSL, Concurrency: c.Concurrency}
		gpus := 0
		if mode == "agg" {
			q.TP, q.EP, q.DP, q.Workers = c.Agg.TP, c.Agg.EP, c.Agg.DP, c.Agg.Workers
			gpus = c.Agg.Workers * c.Agg.GPUsPerWorker
			if c.Agg.GPUsPerWorker != c.Agg.TP*c.Agg.DP {
				t.Errorf("agg %s: %d GPUs a worker, want tp x dp", Describe(*c), c.Agg.GPUsPerWorker)
			}
		} else {
			p, d := c.Prefill, c.Decode
			q.PrefillTP, q.PrefillEP, q.PrefillDP, q.PrefillWorkers = p.TP, p.EP, p.DP, p.Workers
			q.DecodeTP, q.DecodeEP, q.DecodeDP, q.DecodeWorkers = d.TP, d.EP, d.DP, d.Workers
			gpus = p.Workers*p.GPUsPerWorker + d.Workers*d.GPUsPerWorker
		}
		if float64(gpus) != c.GPUs {
			t.Errorf("%s %s: %v GPUs, the pools' workers hold %d", mode, Describe(*c), c.GPUs, gpus)
		}
		out, err := estimate.Run(testEnv(), q, serving.Options{})
		if err != nil {
			t.Fatalf("%s %s: %v", mode, Describe(*c), err)
		}
		if math.Abs(out.TTFTms-c.TTFTms) > 1e-6*c.TTFTms || math.Abs(out.TPOTms-c.ITLms) > 1e-6*c.ITLms ||
			math.Abs(out.OutputTokensPerS-c.TokensPerS) > 1e-6*c.TokensPerS {
			t.Errorf("%s %s: configure TTFT %.3f ITL %.3f tok/s %.1f, estimate %.3f %.3f %.1f", mode, Describe(*c), c.TTFTms, c.ITLms, c.TokensPerS,
				out.TTFTms, out.TPOTms, out.OutputTokensPerS)
		}
	}
}

// An attention-DP prefill worker is dp queues, each with its share of the
// requests, not one server dp times as fast: with the same saturated rate
// per rank, a dp 4 worker takes 4 times what a one-rank worker takes
// within a TTFT budget, and at 4 times the rate its TTFT is the same.
func TestPrefillQueuePerRank(t *testing.T) {
	one := &engine{dp: 1, points: []Point{{Concurrency: 1, TTFTms: 100, RequestsPerS: 5}, {Concurrency: 8, TTFTms: 400, RequestsPerS: 10}}}
	four := &engine{dp: 4, points: []Point{{Concurrency: 1, TTFTms: 100, RequestsPerS: 5}, {Concurrency: 32, TTFTms: 400, RequestsPerS: 40}}}
	for _, pct := range []float64{0, 90} {
		c1, c4 := one.prefillCapacity(500, pct), four.prefillCapacity(500, pct)
		if c1 <= 0 || math.Abs(c4-4*c1) > 1e-9*c4 {
			t.Errorf("p%.0f: dp 4 takes %.3f req/s, one rank %.3f; want 4 times", pct, c4, c1)
		}
	}
	d1 := &deployment{pre: one, np: 1}
	d4 := &deployment{pre: four, np: 1}
	if a, b := d1.prefillTTFT(6), d4.prefillTTFT(24); math.Abs(a-b) > 1e-9*a {
		t.Errorf("TTFT %.3f ms for one rank at 6 req/s, %.3f ms for dp 4 at 24 req/s; want the same", a, b)
	}
}
