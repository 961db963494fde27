package estimate

import (
	"errors"
	"fmt"
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
		{func(q *Query) { q.DecodeWorkers = 2 }, "decode_workers: only with mode disagg"},
		{func(q *Query) { same := true; q.SameNode = &same }, "same_node: only with mode disagg"},
		{func(q *Query) { q.Mode, q.PrefillTP, q.DecodeTP, q.Workers = "disagg", 1, 1, 3 }, "workers: mode disagg takes prefill_workers and decode_workers"},
		{func(q *Query) { q.Mode, q.PrefillTP, q.DecodeTP, q.PP = "disagg", 1, 1, 2 }, "pp: mode disagg takes prefill_pp and decode_pp"},
		{func(q *Query) { q.Precision = "int3" }, "precision"},
		{func(q *Query) { q.KVPrecision = "fp2" }, "kv_precision"},
		{func(q *Query) { q.Slice = "9g.99gb" }, "unknown MIG profile"},
		{func(q *Query) { q.ISL = -1 }, "isl"},
		{func(q *Query) { q.Harness = "open-loop" }, "harness: \"open-loop\" is not a harness; use one of steady, burst, queued"},
		{func(q *Query) { q.Harness, q.RequestsPerUser = "burst", 1 }, "requests_per_user: 1; use at least 2"},
		{func(q *Query) { q.SpecTokens = 3 }, "spec_accept: required with spec_tokens 3"},
		{func(q *Query) { q.SpecTokens, q.SpecAccept = 2, 3.5 }, "spec_accept: 3.5 must be 1 to spec_tokens+1 (3)"},
		{func(q *Query) { q.Mode, q.SpecAccept = "disagg", 2 }, "spec_accept: 2 needs spec_tokens"},
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

// Intervals come with an estimate of a kind the parameters measured, and
// only then.
func TestRunIntervals(t *testing.T) {
	e := env()
	e.Params = e.Params.Clone()
	e.Params.Intervals = &perf.Intervals{Kinds: map[string]*perf.IntervalKind{
		perf.IntervalKey(perf.VLLM, false, "agg"): {N: 50, TTFT: perf.Ratio{P10: 0.9, P50: 1.2, P90: 2}, TPOT: perf.Ratio{P10: 0.8, P50: 1, P90: 1.25}}}}
	q := Defaults()
	q.Backend = "vllm"
	out, err := Run(e, q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.TTFTInterval == nil || out.TPOTInterval == nil || *out.TTFTInterval != [2]float64{0.9 * out.TTFTms, 2 * out.TTFTms} ||
		*out.TPOTInterval != [2]float64{0.8 * out.TPOTms, 1.25 * out.TPOTms} {
		t.Errorf("vllm dense agg: intervals %v %v around %.1f / %.2f ms", out.TTFTInterval, out.TPOTInterval, out.TTFTms, out.TPOTms)
	}
	q.Backend = "sglang"
	if out, err = Run(e, q, serving.Options{}); err != nil || out.TTFTInterval != nil || out.TPOTInterval != nil {
		t.Errorf("sglang has no measured spread: want no interval, got %v %v (%v)", out.TTFTInterval, out.TPOTInterval, err)
	}
	// A deployment that does not fit has no latency to put an interval on.
	q.Backend, q.OSL = "vllm", 10_000_000
	out, err = Run(e, q, serving.Options{})
	if out == nil || out.Result == nil || out.Fits || out.TTFTInterval != nil || out.TPOTInterval != nil {
		t.Errorf("a deployment that does not fit: want no interval, got %+v (%v)", out, err)
	}
}

// Attention DP: a worker of tp x dp GPUs runs dp engines; disaggregated
// pools take their own dp and ep; misplaced keys are errors naming them.
func TestRunAttentionDP(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.Backend, q.Precision, q.TP, q.DP, q.EP, q.Concurrency = "deepseek-ai/DeepSeek-R1", "b200_sxm", "trtllm", "fp4", 1, 8, 8, 64
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.GPUs != 8 || out.DP != 8 || out.EP != 8 || out.TP != 1 {
		t.Fatalf("tp1 dp8 ep8: %d GPUs, dp %d, ep %d, tp %d", out.GPUs, out.DP, out.EP, out.TP)
	}
	q.Mode, q.TP, q.DP, q.EP = "disagg", 0, 0, 0
	q.PrefillTP, q.PrefillDP, q.PrefillEP, q.DecodeTP, q.DecodeDP, q.DecodeEP, q.PrefillWorkers, q.DecodeWorkers = 1, 4, 4, 1, 8, 8, 1, 1
	d, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.GPUs != 12 || d.PrefillDP != 4 || d.DecodeDP != 8 {
		t.Fatalf("disagg dp: %d GPUs (want 12), prefill dp %d, decode dp %d", d.GPUs, d.PrefillDP, d.DecodeDP)
	}
	for name, spoil := range map[string]func(q *Query){
		"dp: mode disagg takes prefill_dp": func(q *Query) { q.DP = 2 },
		"only with mode disagg":            func(q *Query) { q.Mode, q.PrefillWorkers = "agg", 1 },
		"dp x workers: 64 x 32": func(q *Query) {
			q.Mode, q.PrefillDP, q.DecodeDP, q.PrefillEP, q.DecodeEP, q.DP, q.Workers = "agg", 0, 0, 0, 0, 64, 32
		},
		"ep: 3 must divide tp x dp": func(q *Query) { q.DecodeEP = 3 },
	} {
		bad := q
		spoil(&bad)
		if _, err := Run(env(), bad, serving.Options{}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// A tp the heads do not divide runs as the engines run it, and the
// output says how the query was read, for each pool it applies to.
func TestRunNotesTPReadAsDP(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.Backend, q.Precision, q.TP, q.ISL, q.OSL, q.Concurrency = "deepseek-ai/DeepSeek-R1", "gb200", "trtllm", "fp4", 36, 1024, 1024, 64
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// TensorRT-LLM's ranks also hold prompts for each other (the second note).
	if out.GPUs != 36 || out.TP != 1 || out.DP != 36 || out.EP != 36 || len(out.Notes) != 2 || !strings.Contains(out.Notes[0], "tp 36 does not divide") ||
		!strings.Contains(out.Notes[1], "balances its 36 attention-DP ranks") {
		t.Fatalf("tp 36: %d GPUs, tp %d dp %d ep %d, notes %q", out.GPUs, out.TP, out.DP, out.EP, out.Notes)
	}
	q.TP = 8
	if out, err := Run(env(), q, serving.Options{}); err != nil || len(out.Notes) != 0 {
		t.Fatalf("tp 8 is plain tensor parallelism: notes %q, err %v", out.Notes, err)
	}
	q.Mode, q.TP, q.PrefillTP, q.DecodeTP, q.PrefillWorkers, q.DecodeWorkers = "disagg", 0, 4, 24, 1, 1
	d, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.GPUs != 28 || d.DecodeDP != 24 || len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], "decode_tp 24") {
		t.Fatalf("disagg prefill tp 4, decode tp 24: %d GPUs, decode dp %d, notes %q", d.GPUs, d.DecodeDP, d.Notes)
	}
}

// A disaggregated query without worker counts gets pools sized to its
// users, in whole workers of dp engines, and says so; given counts are kept.
func TestRunSizesPoolsWithoutCounts(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.Backend, q.Precision, q.Mode = "deepseek-ai/DeepSeek-R1", "b200_sxm", "sglang", "fp8", "disagg"
	q.TP, q.PrefillTP, q.DecodeTP, q.DecodeDP, q.DecodeEP, q.ISL, q.OSL = 0, 8, 1, 8, 8, 8192, 1024
	var gpus []int
	for _, c := range []int{1, 4096} {
		q.Concurrency = c
		out, err := Run(env(), q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !out.PoolsSized || out.Prefill < 1 || out.Decode < 1 || out.GPUs != out.Prefill*8+out.Decode*8 {
			t.Fatalf("%d users: sized %v, %dP+%dD on %d GPUs", c, out.PoolsSized, out.Prefill, out.Decode, out.GPUs)
		}
		gpus = append(gpus, out.GPUs)
	}
	if gpus[1] <= gpus[0] {
		t.Errorf("4,096 users on %d GPUs, no more than 1 user's %d", gpus[1], gpus[0])
	}
	q.DecodeWorkers = 3
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !out.PoolsSized || out.Decode != 3 || out.Prefill < 1 {
		t.Errorf("decode_workers 3 given: sized %v, %dP+%dD", out.PoolsSized, out.Prefill, out.Decode)
	}
	q.PrefillWorkers = 2
	if out, err = Run(env(), q, serving.Options{}); err != nil {
		t.Fatal(err)
	}
	if out.PoolsSized || out.Prefill != 2 || out.Decode != 3 {
		t.Errorf("both counts given: sized %v, %dP+%dD", out.PoolsSized, out.Prefill, out.Decode)
	}
}

// A worker priced with another backend's MoE kernel says so, in each
// mode; one priced with its own says nothing.
func TestRunNotesSubstitutedMoEKernel(t *testing.T) {
	for _, q := range []Query{
		{Model: "moonshotai/Kimi-K2.5", GPU: "b200_sxm", Precision: "int4", Backend: "vllm", TP: 8, ISL: 1024, OSL: 256, Concurrency: 4},
		{Model: "moonshotai/Kimi-K2.5", GPU: "b200_sxm", Precision: "int4", Backend: "vllm", Mode: "disagg", PrefillTP: 8, DecodeTP: 8, ISL: 1024, OSL: 256, Concurrency: 4},
	} {
		out, err := Run(env(), q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "experts priced as sglang's w4a16 summary") {
			t.Errorf("%s int4 on vllm: notes %q, want one naming the kernel the experts are priced with", q.Mode, out.Notes)
		}
		q.Precision = "fp4"
		if out, err := Run(env(), q, serving.Options{}); err != nil || len(out.Notes) != 0 {
			t.Errorf("%s fp4 on vllm: notes %q, err %v; want none", q.Mode, out.Notes, err)
		}
	}
}

// An attention-DP worker says when its ranks hold prompts for each other:
// on a backend with a hold, and only with dp > 1.
func TestRunNotesADPHold(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.Precision, q.ISL, q.OSL, q.Concurrency = "deepseek-ai/DeepSeek-R1", "b200_sxm", "fp4", 1024, 256, 64
	for _, tc := range []struct {
		backend string
		tp, dp  int
		hold    int
		want    bool
	}{
		{"trtllm", 1, 8, 50, true},
		{"trtllm", 1, 8, 0, false},
		{"trtllm", 8, 1, 50, false},
		{"vllm", 1, 8, 0, false},
	} {
		e := env()
		e.Params = e.Params.Clone()
		b, _ := perf.ParseBackend(tc.backend)
		e.Params.Backends[b].ADPBalanceIters = tc.hold
		q.Backend, q.TP, q.DP, q.EP = tc.backend, tc.tp, tc.dp, 8
		out, err := Run(e, q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, n := range out.Notes {
			if strings.Contains(n, "attention-DP ranks") && strings.Contains(n, fmt.Sprintf("up to %d iterations", tc.hold)) {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("%s tp %d dp %d hold %d: notes %q, want the hold named: %v", tc.backend, tc.tp, tc.dp, tc.hold, out.Notes, tc.want)
		}
	}
}

// A request longer than the model's context is answered with a note that
// says so; one that fits gets none.
func TestRunNotesContext(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.TP, q.Concurrency = "Qwen/Qwen3-32B", "h200_sxm", 8, 1
	for _, tc := range []struct {
		isl, osl int
		want     bool
	}{{40000, 960, false}, {40000, 961, true}, {100000, 100, true}} {
		q.ISL, q.OSL = tc.isl, tc.osl
		out, err := Run(env(), q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := len(out.Notes) == 1 && strings.Contains(out.Notes[0], fmt.Sprintf("isl + osl = %d tokens exceeds", tc.isl+tc.osl)) &&
			strings.Contains(out.Notes[0], "context of 40960")
		if got != tc.want || (!tc.want && len(out.Notes) != 0) {
			t.Errorf("isl %d osl %d: notes %q, want a context note: %v", tc.isl, tc.osl, out.Notes, tc.want)
		}
	}
}

// More users than the deployment holds at once get a note that the rest
// queue (their wait is in TTFT); for an MLA model under tensor parallelism
// it names attention DP, which does not copy the latent cache to every GPU.
// A query that fits every user gets none.
func TestRunNotesQueue(t *testing.T) {
	q := Defaults()
	q.Model, q.GPU, q.Backend, q.Precision, q.TP, q.ISL, q.OSL, q.Concurrency = "deepseek-ai/DeepSeek-R1", "gb200", "trtllm", "fp4", 32, 8192, 1024, 2150
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	queue := func(notes []string) string {
		for _, n := range notes {
			if strings.Contains(n, "wait for a slot") {
				return n
			}
		}
		return ""
	}
	// TensorRT-LLM sets aside each request's whole 8,192 + 1,024 tokens.
	held := out.KVCacheTokens / (8192 + 1024)
	n := queue(out.Notes)
	if held >= 2150 || !strings.Contains(n, fmt.Sprintf("concurrency 2150 exceeds the %d requests", held)) || !strings.Contains(n, "dp 32, tp 1") ||
		!strings.Contains(n, "whole length, set aside at admission") {
		t.Fatalf("tp 32, 2150 users, %d held: notes %q", held, out.Notes)
	}
	q.Concurrency = held
	if out, err := Run(env(), q, serving.Options{}); err != nil || queue(out.Notes) != "" {
		t.Fatalf("%d users, all held: notes %q, err %v", q.Concurrency, out.Notes, err)
	}
	q.Concurrency = held + 1
	if out, err := Run(env(), q, serving.Options{}); err != nil || queue(out.Notes) == "" {
		t.Fatalf("%d users, one more than held: notes %q, err %v", q.Concurrency, out.Notes, err)
	}
	q.Model, q.GPU, q.Backend, q.Slice, q.Precision, q.TP, q.ISL, q.OSL, q.Concurrency = "Qwen/Qwen3-8B", "a10", "vllm", "1/2", "fp8", 1, 4000, 500, 32
	if out, err := Run(env(), q, serving.Options{}); err != nil || !strings.Contains(queue(out.Notes), "exceeds the 1 request the") ||
		!strings.Contains(queue(out.Notes), "their mean length") {
		t.Fatalf("Qwen3-8B on half an A10, 32 users: notes %q, err %v", out.Notes, err)
	}
	q.Model, q.GPU, q.Backend, q.Slice, q.Precision, q.TP, q.ISL, q.OSL, q.Concurrency = "Qwen/Qwen3-235B-A22B", "gb200", "trtllm", "", "fp8", 4, 8192, 1024, 100000
	if out, err := Run(env(), q, serving.Options{}); err != nil || !strings.Contains(queue(out.Notes), "exceeds") || strings.Contains(queue(out.Notes), "MLA") {
		t.Fatalf("Qwen3-235B (no MLA), 100000 users: notes %q, err %v", out.Notes, err)
	}
}

// A MoE worker of more than 8 tensor-parallel GPUs with no ep is priced as
// given, with a note naming the attention-DP layout to try; 8 GPUs, or
// experts spread by ep, get none, and a disaggregated pool's note names
// its role's keys.
func TestRunNotesWideTP(t *testing.T) {
	wide := func(notes []string) string {
		for _, n := range notes {
			if strings.Contains(n, "with no ep cuts each") {
				return n
			}
		}
		return ""
	}
	q := Defaults()
	q.Model, q.GPU, q.Backend, q.Precision, q.TP, q.ISL, q.OSL, q.Concurrency = "deepseek-ai/DeepSeek-R1", "gb200", "trtllm", "fp4", 32, 1024, 1024, 64
	out, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := wide(out.Notes); out.TP != 32 || out.DP != 1 || !strings.Contains(n, "32 slices of 64 of its 2048 FFN columns") || !strings.Contains(n, "give dp 32, tp 1 and ep 32") {
		t.Fatalf("tp 32: tp %d dp %d, notes %q", out.TP, out.DP, out.Notes)
	}
	for _, c := range []struct{ tp, ep int }{{8, 0}, {32, 32}} {
		q.TP, q.EP = c.tp, c.ep
		if out, err := Run(env(), q, serving.Options{}); err != nil || wide(out.Notes) != "" {
			t.Fatalf("tp %d ep %d: notes %q, err %v", c.tp, c.ep, out.Notes, err)
		}
	}
	q.Mode, q.TP, q.EP, q.PrefillTP, q.DecodeTP, q.PrefillWorkers, q.DecodeWorkers = "disagg", 0, 0, 4, 16, 1, 1
	d, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := wide(d.Notes); !strings.HasPrefix(n, "decode_tp 16 with no ep") || !strings.Contains(n, "give decode_dp 16, decode_tp 1 and decode_ep 16") {
		t.Fatalf("decode tp 16: notes %q", d.Notes)
	}
}

// The note's suggested ep divides the GPUs and does not exceed the
// experts, so the layout it names is one the estimate accepts.
func TestNoteWideTPSuggestsValidEP(t *testing.T) {
	m, err := catalog.MustDefault().Model("deepseek-ai/DeepSeek-R1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ experts, tp, ep int }{{256, 32, 32}, {8, 16, 8}, {12, 16, 8}, {60, 16, 16}, {7, 12, 6}} {
		moe := *m.MoE
		moe.Experts = c.experts
		mm := *m
		mm.MoE = &moe
		var o Output
		o.noteWideTP("", perf.Config{Model: &mm, TP: c.tp, EP: 1, DP: 1})
		if len(o.Notes) != 1 || !strings.HasSuffix(o.Notes[0], fmt.Sprintf("give dp %d, tp 1 and ep %d to price that", c.tp, c.ep)) {
			t.Errorf("%d experts at tp %d: notes %q, want ep %d", c.experts, c.tp, o.Notes, c.ep)
		}
	}
}

// Speculative decoding shortens a light load's tpot by about the tokens a
// step gains, in both modes, and the output says what it assumed.
func TestRunSpeculativeDecoding(t *testing.T) {
	for _, mode := range []string{"agg", "disagg"} {
		q := Defaults()
		q.Mode, q.Concurrency, q.OSL = mode, 2, 300
		if mode == "disagg" {
			q.PrefillWorkers, q.DecodeWorkers = 1, 1
		}
		plain, err := Run(env(), q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		q.SpecTokens, q.SpecAccept = 3, 2.5
		spec, err := Run(env(), q, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r := plain.TPOTms / spec.TPOTms; r < 1.8 || r > 2.5 {
			t.Errorf("%s: tpot %.2f ms plain, %.2f ms speculative: %.2fx, want 1.8-2.5x at 2 users", mode, plain.TPOTms, spec.TPOTms, r)
		}
		if spec.SpecTokens != 3 || spec.SpecAccept != 2.5 || plain.SpecTokens != 0 {
			t.Errorf("%s: output echoes spec %d/%g (plain %d)", mode, spec.SpecTokens, spec.SpecAccept, plain.SpecTokens)
		}
		if !strings.Contains(strings.Join(spec.Notes, " "), "speculative decoding: each decode step drafts 3") {
			t.Errorf("%s: notes %q", mode, spec.Notes)
		}
	}
}

// Speculative decoding speeds the decode, so the same users send more
// requests a second and the prompts become the bottleneck: at 64 users on
// one H200 the request rate rises by more than a third while the TTFT
// grows with the prompts' queue.
func TestSpeculationMovesTheBottleneckToPrefill(t *testing.T) {
	q := Defaults()
	q.GPU, q.Concurrency = "h200_sxm", 64
	plain, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q.SpecTokens, q.SpecAccept = 3, 2.4
	spec, err := Run(env(), q, serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if spec.RequestsPerS < 1.3*plain.RequestsPerS || spec.TTFTP50ms < 2*plain.TTFTP50ms {
		t.Errorf("speculative %.2f req/s, median ttft %.0f ms; plain %.2f req/s, %.0f ms", spec.RequestsPerS, spec.TTFTP50ms, plain.RequestsPerS, plain.TTFTP50ms)
	}
}

// A model of an architecture class the embedded catalog does not have is
// priced from its sizes, and the estimate says so; a known one has no note.
func TestUnknownArchitectureNote(t *testing.T) {
	cat := catalog.MustDefault()
	m, err := catalog.ParseHFConfig([]byte(`{"architectures":["MysteryForCausalLM"],"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"num_hidden_layers":32,"intermediate_size":14336,"vocab_size":128256}`), "example/mystery")
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.AddModel(m); err != nil {
		t.Fatal(err)
	}
	env := Env{Catalog: cat, Params: perf.MustDefaultParams()}
	note := func(model string) bool {
		out, err := Run(env, Query{Model: model, GPU: "h100_sxm", Backend: "vllm", ISL: 1000, OSL: 100, Concurrency: 4}, serving.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range out.Notes {
			if strings.Contains(n, "architecture MysteryForCausalLM is none of the embedded catalog's models'") {
				return true
			}
		}
		return false
	}
	if !note("example/mystery") || note("meta-llama/Llama-3.1-8B") {
		t.Errorf("architecture note: mystery %v, llama %v; want only the mystery model's", note("example/mystery"), note("meta-llama/Llama-3.1-8B"))
	}
}
