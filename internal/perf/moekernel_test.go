package perf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

func TestMoEKernelSeconds(t *testing.T) {
	k := MoEKernel{Compute: 0.4, Bandwidth: 0.8, RowsHalf: 32, LaunchUs: 40, ParamsHalf: 1e7}
	const peak, bw = 1979e12, 4.8e12
	shape := func(tokens float64) MoEShape {
		return MoEShape{Tokens: tokens, TopK: 8, Experts: 128, ExpertParams: 3 * 4096 * 1536, WeightBytes: 1}
	}
	prev := 0.0
	for _, n := range []float64{1, 4, 16, 64, 256, 1024, 4096, 16384} {
		got := k.Seconds(shape(n), peak, bw)
		if !(got > prev) {
			t.Errorf("%v tokens: %g s, not more than fewer tokens' %g s", n, got, prev)
		}
		prev = got
	}
	// One token reads its top-k experts: bandwidth-bound.
	one := shape(1)
	if got, want := k.Seconds(one, peak, bw), 8*one.ExpertParams/(bw*0.8); got < want || got > 1.1*want {
		t.Errorf("one token: %g s, want about the read of 8 experts %g s", got, want)
	}
	// Many tokens: compute at Compute x the size and row factors.
	big := shape(1 << 20)
	rows := big.Tokens * 8 / 128
	want := 2 * big.Tokens * 8 * big.ExpertParams / (peak * 0.4 * rows / (rows + 32) * big.ExpertParams / (big.ExpertParams + 1e7))
	if got := k.Seconds(big, peak, bw); math.Abs(got/want-1) > 0.01 {
		t.Errorf("compute-bound: %g s, want %g s", got, want)
	}
	// Eager calls pay the launch; a whole expert per GPU is faster than a slice.
	eager := one
	eager.Eager = true
	if d := k.Seconds(eager, peak, bw) - k.Seconds(one, peak, bw); math.Abs(d-40e-6) > 1e-12 {
		t.Errorf("eager call adds %g s, want 40 us", d)
	}
	sliced, whole := shape(4096), shape(4096)
	sliced.ExpertParams /= 8
	whole.ExpertParams /= 8
	whole.SliceParams = whole.ExpertParams * 8
	if k.Seconds(whole, peak, bw) >= k.Seconds(sliced, peak, bw) {
		t.Error("whole experts (expert parallelism) should run faster than tp slices of the same work")
	}
}

func TestParamsRejectBadMoEKernels(t *testing.T) {
	base, err := MustDefaultParams().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	good := "families:\n  hopper:\n    moe:\n      vllm:\n        fp8: {compute: 0.3, bandwidth: 0.8, rowsHalf: 50, launchUs: 40, paramsHalf: 3000000}\n"
	for _, c := range []struct{ moe, want string }{
		{"      vllm:\n        fp8: {compute: 0, bandwidth: 0.8, rowsHalf: 50, launchUs: 40}\n", "families.hopper.moe.vllm.fp8.compute"},
		{"      vllm:\n        fp8: {compute: 0.3, bandwidth: 3, rowsHalf: 50, launchUs: 40}\n", "families.hopper.moe.vllm.fp8.bandwidth"},
		{"      vllm:\n        fp8: {compute: 0.3, bandwidth: 0.8, rowsHalf: -1, launchUs: 40}\n", "rowsHalf"},
		{"      vllm:\n        fp8: {compute: 0.3, bandwidth: 0.8, rowsHalf: 5, launchUs: 1e9}\n", "launchUs"},
		{"      vllm:\n        fp8_block: {compute: 0.3, bandwidth: 0.8, rowsHalf: 5, launchUs: 4}\n", `unknown weight precision "fp8_block"`},
		{"      tgi:\n        fp8: {compute: 0.3, bandwidth: 0.8, rowsHalf: 5, launchUs: 4}\n", "families.hopper.moe.tgi: unknown backend"},
		{"      vllm:\n        fp8: null\n", "families.hopper.moe.vllm.fp8: empty"},
	} {
		doc := mergeHopperMoE(t, base, c.moe)
		if _, err := ParseParams(doc, "test"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error naming %q", c.moe, err, c.want)
		}
	}
	p, err := ParseParams(mergeHopperMoE(t, base, strings.SplitN(good, "moe:\n", 2)[1]), "test")
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.MustDefault()
	gpu := func(name string) *catalog.GPU {
		g, err := c.GPU(name)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	h200 := gpu("h200_sxm")
	if k := p.MoEKernelFor(h200, VLLM, catalog.FP8); k == nil || k.ParamsHalf != 3e6 {
		t.Fatalf("summary not found: %+v", k)
	}
	volta := *h200
	volta.Architecture = "volta"
	if p.MoEKernelFor(h200, SGLang, catalog.FP8) != nil || p.MoEKernelFor(&volta, VLLM, catalog.FP8) != nil {
		t.Error("found a summary that was not given")
	}
	// A summary measured on compute capability 10 (B200) does not price the
	// RTX PRO 6000 (12.0), a Blackwell that runs other kernels.
	bw := MustDefaultParams().Clone()
	bw.Families[catalog.Blackwell].MoE = map[Backend]map[catalog.Precision]*MoEKernel{
		TRTLLM: {catalog.FP4: {Compute: 0.3, Bandwidth: 0.7, RowsHalf: 50, ComputeCapability: "10"}},
	}
	if bw.MoEKernelFor(gpu("b200_sxm"), TRTLLM, catalog.FP4) == nil || bw.MoEKernelFor(gpu("rtx_pro_6000"), TRTLLM, catalog.FP4) != nil {
		t.Error("a compute-capability-10 summary must price the B200 and not the RTX PRO 6000")
	}
}

// mergeHopperMoE puts a moe block into the hopper family of a params file.
func mergeHopperMoE(t *testing.T, base []byte, moe string) []byte {
	t.Helper()
	s := string(base)
	i := strings.Index(s, "  hopper:\n")
	if i < 0 {
		t.Fatal("no hopper family")
	}
	// Drop an existing moe block of the family, then add this one.
	head, tail := s[:i+len("  hopper:\n")], s[i+len("  hopper:\n"):]
	var kept []string
	skipping := false
	for _, line := range strings.SplitAfter(tail, "\n") {
		switch {
		case strings.HasPrefix(line, "    moe:"):
			skipping = true
			continue
		case skipping && strings.HasPrefix(line, "      "):
			continue
		}
		skipping = false
		kept = append(kept, line)
	}
	return []byte(head + "    moe:\n" + moe + strings.Join(kept, ""))
}

// A worker with a summary prices experts by it; decode-only iterations
// (CUDA graphs) do not pay its launch cost, iterations with prompts do.
func TestWorkerUsesMoEKernel(t *testing.T) {
	c := catalog.MustDefault()
	m, err := c.Model("Qwen/Qwen3-30B-A3B")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Device("h200_sxm", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: m, Device: d, Backend: VLLM, Weights: catalog.FP8, TP: 1}
	plain := MustDefaultParams().Clone()
	for _, f := range plain.Families {
		f.MoE = nil
	}
	slow := plain.Clone()
	slow.Families[catalog.Hopper].MoE = map[Backend]map[catalog.Precision]*MoEKernel{
		// Slow, but not so slow at decode that it gives way (Plausible).
		VLLM: {catalog.FP8: {Compute: 0.1, Bandwidth: 0.3, RowsHalf: 4, LaunchUs: 100, ParamsHalf: 1e7}},
	}
	wPlain, err := NewWorker(cfg, plain)
	if err != nil {
		t.Fatal(err)
	}
	wSlow, err := NewWorker(cfg, slow)
	if err != nil {
		t.Fatal(err)
	}
	decode := Batch{DecodeSeqs: 32, DecodeCtx: 32 * 2000, Sampled: 32}
	prefill := Batch{PrefillTokens: 4096, PrefillSeqs: 1, PrefillPairs: 4096 * 4097 / 2, Sampled: 1}
	for name, b := range map[string]Batch{"decode": decode, "prefill": prefill} {
		if wSlow.StepTime(b) <= 1.2*wPlain.StepTime(b) {
			t.Errorf("%s: %g s with a slow MoE kernel, %g s priced as dense GEMMs", name, wSlow.StepTime(b), wPlain.StepTime(b))
		}
	}
	layers := float64(m.MoELayers())
	if got := wSlow.moeCompute(32, true) - wSlow.moeCompute(32, false); math.Abs(got-100e-6) > 1e-12 {
		t.Errorf("an eager MoE call adds %g s, want the 100 us launch", got)
	}
	// Without the launch cost, decode steps are unchanged and prompt steps
	// save one launch per MoE layer.
	free := slow.Clone()
	free.Families[catalog.Hopper].MoE[VLLM][catalog.FP8].LaunchUs = 0
	wFree, err := NewWorker(cfg, free)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := wSlow.StepTime(decode), wFree.StepTime(decode); a != b {
		t.Errorf("decode step %g s with a launch cost, %g s without; graphed steps pay none", a, b)
	}
	if d := wSlow.StepTime(prefill) - wFree.StepTime(prefill); math.Abs(d-layers*100e-6) > 1e-9 {
		t.Errorf("prompt step pays %g s of launches, want %g s (%v MoE layers)", d, layers*100e-6, layers)
	}
}

func TestMoEKernelForReplacesImplausibleSummaries(t *testing.T) {
	c := catalog.MustDefault()
	h200, err := c.GPU("h200_sxm")
	if err != nil {
		t.Fatal(err)
	}
	type kernels = map[Backend]map[catalog.Precision]*MoEKernel
	slow := &MoEKernel{Compute: 0.08, Bandwidth: 0.11, ComputeCapability: "9"}
	fast := &MoEKernel{Compute: 0.2, Bandwidth: 0.9, ComputeCapability: "9"}
	faster := &MoEKernel{Compute: 0.2, Bandwidth: 1.1, ComputeCapability: "9"}
	otherCC := &MoEKernel{Compute: 0.2, Bandwidth: 1.1, ComputeCapability: "10"}
	// Streaming comes out a hair under Bandwidth (the compute term adds to
	// the read); this one's decode streams at the bound.
	edge := &MoEKernel{Compute: 1, Bandwidth: slowestServed * 1.001, ComputeCapability: "9"}
	if s := edge.DecodeStreaming(h200.PeakTFLOPS(catalog.W4A16)*1e12, h200.MemoryBandwidthGBps*1e9, catalog.W4A16.Bytes()); s < slowestServed || s > slowestServed*1.001 {
		t.Fatalf("edge streams at %g, want the bound %g", s, slowestServed)
	}
	// A fit can carry a slow decode in its compute at few rows per expert
	// rather than in its bandwidth: it gives way all the same.
	slowCompute := &MoEKernel{Compute: 0.08, Bandwidth: 1.2, RowsHalf: 48, ComputeCapability: "9"}
	for _, tc := range []struct {
		name string
		moe  kernels
		want *MoEKernel
		note string // what the note says prices the experts; "" for no note
	}{
		{"plausible kept", kernels{VLLM: {catalog.W4A16: fast}, SGLang: {catalog.W4A16: faster}}, fast, ""},
		{"at the bound kept", kernels{VLLM: {catalog.W4A16: edge}, SGLang: {catalog.W4A16: faster}}, edge, ""},
		{"slow gives way to another backend", kernels{VLLM: {catalog.W4A16: slow}, SGLang: {catalog.W4A16: fast}}, fast, "sglang's w4a16 summary"},
		{"slow in compute gives way too", kernels{VLLM: {catalog.W4A16: slowCompute}, SGLang: {catalog.W4A16: fast}}, fast, "sglang's w4a16 summary"},
		{"the fastest of several", kernels{VLLM: {catalog.W4A16: slow}, SGLang: {catalog.W4A16: fast}, TRTLLM: {catalog.W4A16: faster}}, faster, "trtllm's w4a16 summary"},
		{"only at the same precision", kernels{VLLM: {catalog.W4A16: slow}, SGLang: {catalog.FP8: fast}}, nil, "dense GEMMs"},
		{"only for the same compute capability", kernels{VLLM: {catalog.W4A16: slow}, SGLang: {catalog.W4A16: otherCC}}, nil, "dense GEMMs"},
		{"slow and alone: dense GEMMs", kernels{VLLM: {catalog.W4A16: slow}}, nil, "dense GEMMs"},
		{"none of its own: dense GEMMs as before", kernels{SGLang: {catalog.W4A16: fast}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := MustDefaultParams().Clone()
			p.Families[catalog.Hopper].MoE = tc.moe
			if got := p.MoEKernelFor(h200, VLLM, catalog.W4A16); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			_, note := p.moeKernelChoice(h200, VLLM, catalog.W4A16)
			share := ""
			if own := tc.moe[VLLM][catalog.W4A16]; own != nil {
				s := own.DecodeStreaming(h200.PeakTFLOPS(catalog.W4A16)*1e12, h200.MemoryBandwidthGBps*1e9, catalog.W4A16.Bytes())
				share = fmt.Sprintf(" %.0f%% of h200_sxm's bandwidth in a decode step", 100*s)
			}
			if (tc.note == "") != (note == "") || !strings.HasSuffix(note, tc.note) || (note != "" && !strings.Contains(note, share)) {
				t.Errorf("note %q, want one ending %q and saying%s", note, tc.note, share)
			}
		})
	}
}

// The embedded summaries: vLLM's w4a16 tables are slower than any kernel
// engines serve with, and the model prices vLLM's int4 experts like
// SGLang's instead; its Blackwell MXFP4 table (a fallback kernel, 4-8
// times slower than what vLLM's gpt-oss runs decode at) gives way to
// TensorRT-LLM's MXFP4 summary, whose kernel vLLM serves gpt-oss with on
// Blackwell. Every other embedded summary is its own.
func TestEmbeddedMoESummariesInUse(t *testing.T) {
	c := catalog.MustDefault()
	p := MustDefaultParams()
	for _, gpu := range []string{"h200_sxm", "b200_sxm", "a100_sxm", "l40s"} {
		g, err := c.GPU(gpu)
		if err != nil {
			t.Fatal(err)
		}
		for b, byPrec := range p.Families[g.Architecture].MoE {
			for prec, own := range byPrec {
				got := p.MoEKernelFor(g, b, prec)
				want := own
				if b == VLLM && prec == catalog.W4A16 && (g.Architecture == catalog.Hopper || g.Architecture == catalog.Blackwell) {
					want = p.Families[g.Architecture].MoE[SGLang][catalog.W4A16]
				}
				if b == VLLM && prec == MXFP4 && g.Architecture == catalog.Blackwell {
					want = p.Families[g.Architecture].MoE[TRTLLM][MXFP4]
				}
				if got != want {
					t.Errorf("%s %s %s: summary %+v, want %+v", gpu, b, prec, got, want)
				}
			}
		}
	}
}

// Balanced routing (the kernel tables' rows) reaches min(experts, picks);
// serving's independent picks reach fewer, as counting random draws says.
func TestActiveExperts(t *testing.T) {
	for _, c := range []struct {
		tokens, topk, experts float64
		balanced, random      float64
	}{
		{1, 8, 256, 8, 8},
		{4, 8, 256, 32, 30.5},
		{32, 8, 256, 256, 163.3},
		{64, 8, 256, 256, 222.4},
		{1024, 2, 8, 8, 8},
	} {
		s := MoEShape{Tokens: c.tokens, TopK: c.topk, Experts: c.experts}
		r := s.ActiveExperts()
		s.Balanced = true
		b := s.ActiveExperts()
		if b != c.balanced || math.Abs(r-c.random) > 0.1 {
			t.Errorf("%v tokens x %v of %v experts: balanced %.1f random %.1f, want %.1f and %.1f", c.tokens, c.topk, c.experts, b, r, c.balanced, c.random)
		}
	}
	// Brute force: the mean number of distinct experts over random picks.
	rng := rand.New(rand.NewPCG(1, 2))
	const trials, tokens, topk, experts = 4000, 32, 8, 256
	sum := 0
	for range trials {
		var hit [experts]bool
		n := 0
		for range tokens {
			// A token's top-k are distinct experts.
			var picked [experts]bool
			for k := 0; k < topk; {
				e := rng.IntN(experts)
				if picked[e] {
					continue
				}
				picked[e] = true
				k++
				if !hit[e] {
					hit[e] = true
					n++
				}
			}
		}
		sum += n
	}
	want := MoEShape{Tokens: tokens, TopK: topk, Experts: experts}.ActiveExperts()
	if got := float64(sum) / trials; math.Abs(got/want-1) > 0.01 {
		t.Errorf("random picks reach %.1f experts on average, the formula says %.1f", got, want)
	}
}
