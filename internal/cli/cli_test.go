package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := NewRoot(&out, &errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./internal/cli -update accepts it):\n%s", name, got)
	}
}

func TestGoldenOutputs(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"catalog-gpus.txt", []string{"catalog", "gpus"}},
		{"catalog-devices.txt", []string{"catalog", "devices"}},
		{"catalog-models.txt", []string{"catalog", "models"}},
		{"estimate-default.txt", []string{"estimate"}},
		{"estimate-default.json", []string{"estimate", "-o", "json"}},
		{"estimate-breakdown.txt", []string{"estimate", "--model", "deepseek-ai/DeepSeek-R1", "--gpu", "b200_sxm", "--backend", "trtllm",
			"--tp", "8", "--ep", "8", "--isl", "1024", "--osl", "1024", "--concurrency", "64", "--breakdown"}},
		{"estimate-disagg.yaml", []string{"estimate", "--mode", "disagg", "--prefill-tp", "1", "--decode-tp", "2",
			"--prefill-workers", "2", "--decode-workers", "1", "-o", "yaml"}},
		{"estimate-mig.json", []string{"estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "h100_sxm", "--slice", "3g.40gb",
			"--isl", "1000", "--osl", "200", "--concurrency", "8", "-o", "json"}},
		{"configure-default.txt", []string{"configure", "--explain"}},
		{"configure-pool-loadmatch.txt", []string{"configure", "--pool", "../../examples/pool.yaml", "--model", "Qwen/Qwen3-8B",
			"--isl", "2000", "--osl", "300", "--ttft", "800", "--itl", "40", "--pick", "load-match", "--request-rate", "20", "--top", "5"}},
		{"configure-dgdr-dynamo.yaml", []string{"configure", "-f", "../../examples/dgdr.yaml", "--emit", "dynamo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := run(t, tc.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
			}
			golden(t, tc.name, out)
		})
	}
}

func TestEstimateJSONContract(t *testing.T) {
	out, _, err := run(t, "estimate", "--model", "Qwen/Qwen3-32B", "--gpu", "h100_sxm", "--slice", "", "--precision", "fp8",
		"--backend", "vllm", "--tp", "2", "--isl", "4000", "--osl", "500", "--concurrency", "32", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ttft_ms", "tpot_ms", "output_tokens_per_s", "output_tokens_per_s_per_gpu", "kv_cache_tokens", "max_concurrency", "fits"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if m["fits"] != true || m["ttft_ms"].(float64) <= 0 || m["gpus"].(float64) != 2 {
		t.Errorf("unexpected estimate: %v", out)
	}
}

// The breakdown is asked per line in a batch, as a flag is.
func TestBatchBreakdownKey(t *testing.T) {
	f := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(f, []byte(`{"model":"Qwen/Qwen3-8B","gpu":"h200_sxm","breakdown":true}`+"\n"+`{"model":"Qwen/Qwen3-8B","gpu":"h200_sxm"}`+"\n"), 0o644)
	out, _, err := run(t, "estimate", "-f", f, "-o", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != 2 || !strings.Contains(got[0], `"breakdown":{"decode_step":{"sequences":`) || strings.Contains(got[1], `"breakdown"`) {
		t.Fatalf("breakdown per line:\n%s", out)
	}
}

// An empty query file is an error, not an empty table that looks answered.
func TestBatchOfNothing(t *testing.T) {
	f := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(f, nil, 0o644)
	if _, _, err := run(t, "estimate", "-f", f); err == nil || !strings.Contains(err.Error(), "no queries (the input is empty)") {
		t.Errorf("empty file: %v", err)
	}
}

func TestBatchKeepsOrderAndReportsBadLines(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "q.jsonl")
	lines := []string{
		`{"model":"Qwen/Qwen3-8B","gpu":"h200_sxm","tp":1,"isl":1024,"osl":128,"concurrency":4}`,
		`{"model":"NoSuch/Model","gpu":"h200_sxm"}`,
		`not json`,
		`{"model":"meta-llama/Llama-3.1-70B","gpu":"a10","precision":"bf16"}`,
		`{"model":"Qwen/Qwen3-8B","gpu":"h200_sxm","tpp":2}`,
		`{"model":"Qwen/Qwen3-8B","gpu":"l40s","isl":512,"osl":64,"concurrency":2}`,
	}
	os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	out, _, err := run(t, "estimate", "-f", f, "-o", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != len(lines) {
		t.Fatalf("%d result lines for %d queries:\n%s", len(got), len(lines), out)
	}
	want := []string{`"device":"h200_sxm"`, `closest: `, `line 3`, `"fits":false`, `unknown field \"tpp\"`, `"device":"l40s"`}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("line %d: %s\nwant it to contain %s", i+1, got[i], w)
		}
	}
	if !strings.Contains(got[3], "short by") || !strings.Contains(got[3], "smallest fitting") {
		t.Errorf("a model that does not fit must say by how much and what fits: %s", got[3])
	}
}

// A batch with unanswered lines says so on stderr; one with no answer at
// all (a YAML file given as JSON lines) fails the command.
func TestBatchVerdict(t *testing.T) {
	dir := t.TempDir()
	some := filepath.Join(dir, "some.jsonl")
	os.WriteFile(some, []byte(`{"model":"Qwen/Qwen3-8B","gpu":"h200_sxm","isl":512,"osl":64,"concurrency":2}`+"\n"+`{"model":"NoSuch/Model"}`+"\n"), 0o644)
	_, stderr, err := run(t, "estimate", "-f", some, "-o", "jsonl")
	if err != nil || !strings.Contains(stderr, "1 of 2 queries not answered") || !strings.Contains(stderr, "line 2") {
		t.Errorf("partly answered batch: err %v, stderr %q", err, stderr)
	}
	none := filepath.Join(dir, "none.yaml")
	os.WriteFile(none, []byte("model: Qwen/Qwen3-8B\ngpu: h200_sxm\n"), 0o644)
	out, _, err := run(t, "estimate", "-f", none, "-o", "jsonl")
	if err == nil || !strings.Contains(err.Error(), "none of the 2 queries was answered") || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("unanswered batch: %v", err)
	}
	if strings.Count(out, `"error"`) != 2 {
		t.Errorf("each line's error is still written:\n%s", out)
	}
}

// A batch past the bound is refused before any query runs.
func TestBatchBound(t *testing.T) {
	defer func(n int) { maxBatchQueries = n }(maxBatchQueries)
	maxBatchQueries = 2
	f := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(f, []byte(strings.Repeat(`{"model":"Qwen/Qwen3-8B"}`+"\n", 3)), 0o644)
	if _, _, err := run(t, "estimate", "-f", f); err == nil || !strings.Contains(err.Error(), "more than 2 queries") {
		t.Errorf("3 queries over a bound of 2: %v", err)
	}
	os.WriteFile(f, []byte(strings.Repeat(`{"model":"Qwen/Qwen3-8B","gpu":"h200_sxm","isl":512,"osl":64,"concurrency":2}`+"\n", 2)), 0o644)
	if _, _, err := run(t, "estimate", "-f", f); err != nil {
		t.Errorf("2 queries at a bound of 2: %v", err)
	}
	// A line past the bound on one line is named, with the bound and the fix.
	os.WriteFile(f, []byte(`{"model":"Qwen/Qwen3-8B"}`+"\n"+strings.Repeat(" ", maxBatchLine+1)), 0o644)
	if _, _, err := run(t, "estimate", "-f", f); err == nil || !strings.Contains(err.Error(), "line 2 is longer than 4 MiB") {
		t.Errorf("a 4 MiB line: %v", err)
	}
}

func TestErrorsNameTheFix(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"estimate", "--model", "Qwen3-33B"}, "closest: "},
		{[]string{"estimate", "--gpu", "h1000"}, "gpuplane catalog gpus"},
		{[]string{"estimate", "--backend", "tgi"}, "use vllm, sglang or trtllm"},
		{[]string{"estimate", "--tp", "3"}, "must divide the model's 64 attention heads"},
		{[]string{"estimate", "--mode", "disagg", "--tp", "2"}, "prefill_tp and decode_tp"},
		{[]string{"estimate", "-o", "xml"}, "table, json, yaml, jsonl"},
		{[]string{"estimate", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "l4", "--precision", "bf16"}, "short by"},
		{[]string{"catalog", "things"}, "gpus, devices or models"},
		{[]string{"dev", "cluster", "down", "--dir", os.TempDir() + "/gpuplane-no-such-cluster"}, "no cluster recorded"},
		{[]string{"frontend", "--workers", "127.0.0.1:8000"}, "--workers: \"127.0.0.1:8000\" is not a base URL"},
		{[]string{"configure", "--ttft-percentile", "101"}, "sla.ttftPercentile"},
		{[]string{"configure", "--emit", "k8s", "--name", "My_Model"}, "--name: \"My_Model\""},
		{[]string{"configure", "--emit", "k8s", "--namespace", "-x"}, "--namespace"},
		{[]string{"dev", "cluster", "up", "--no-build", "--dir", os.TempDir() + "/gpuplane-no-bins", "--bin-dir", os.TempDir() + "/gpuplane-no-bins"}, "hack/build-cluster-bins.sh"},
	}
	for _, tc := range cases {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

func TestModelConfigFlag(t *testing.T) {
	out, _, err := run(t, "estimate", "--model-config", "../catalog/testdata/qwen3-like-config.json", "--gpu", "l4",
		"--precision", "bf16", "--isl", "512", "--osl", "64", "--concurrency", "2", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"model": "example/Qwen3-Tiny"`) {
		t.Errorf("estimate should use the model from --model-config:\n%s", out)
	}
}

func TestSimulate(t *testing.T) {
	dir := t.TempDir()
	html, js, reqs := filepath.Join(dir, "r.html"), filepath.Join(dir, "s.json"), filepath.Join(dir, "r.csv")
	out, _, err := run(t, "simulate", "-f", "../../examples/burst.yaml", "--report", html, "--json", js, "--requests", reqs, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "simulate-burst.json", out)
	html2 := filepath.Join(dir, "r2.html")
	if _, _, err := run(t, "simulate", "-f", "../../examples/burst.yaml", "-o", html2); err != nil {
		t.Fatal(err)
	}
	if b1, _ := os.ReadFile(html); true {
		if b2, _ := os.ReadFile(html2); string(b1) != string(b2) {
			t.Error("-o report.html should write the same report as --report")
		}
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), "<svg") || strings.Contains(string(page), "<script") || strings.Contains(string(page), "src=\"http") {
		t.Error("the report must be self-contained HTML with inline SVG charts")
	}
	rows, _ := os.ReadFile(reqs)
	var sum struct{ Completed int }
	b, _ := os.ReadFile(js)
	json.Unmarshal(b, &sum)
	if n := strings.Count(string(rows), "\n") - 1; n != sum.Completed || n == 0 {
		t.Errorf("%d request rows for %d completed requests", n, sum.Completed)
	}
}

// The attention-DP example runs: every request completes on one worker of
// 8 ranks, billed for its 8 GPUs.
func TestSimulateAttentionDP(t *testing.T) {
	out, _, err := run(t, "simulate", "-f", "../../examples/attention-dp.yaml", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Requests, Completed int
		GPUHours            float64 `json:"gpu_hours"`
		SimSeconds          float64 `json:"simulated_seconds"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Requests == 0 || sum.Completed != sum.Requests {
		t.Errorf("completed %d of %d requests", sum.Completed, sum.Requests)
	}
	if want := 8 * sum.SimSeconds / 3600; sum.SimSeconds <= 0 || math.Abs(sum.GPUHours-want) > 1e-6*want {
		t.Errorf("%.4f GPU-hours over %.0f s, want %.4f (8 GPUs)", sum.GPUHours, sum.SimSeconds, want)
	}
}

func TestSimulateScenarioErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"unknown field":  "model: Qwen/Qwen3-32B\ngpu: h100_sxm\nreplicaz: 3\n",
		"bad kind":       "model: Qwen/Qwen3-32B\ngpu: h100_sxm\ndurationSeconds: 10\ndeployment: {mode: agg, agg: {replicas: 1}}\nworkload: {kind: magic}\n",
		"two rates":      "model: Qwen/Qwen3-32B\ngpu: h100_sxm\ndurationSeconds: 10\ndeployment: {mode: agg, agg: {replicas: 1}}\nworkload: {kind: poisson, rate: {constant: 1, ramp: {from: 1, to: 2, start: 0, end: 5}}, isl: {fixed: 10}, osl: {fixed: 10}}\n",
		"missing decode": "model: Qwen/Qwen3-32B\ngpu: h100_sxm\ndurationSeconds: 10\ndeployment: {mode: disagg, prefill: {replicas: 1}}\nworkload: {kind: users, users: {count: 2}, isl: {fixed: 10}, osl: {fixed: 10}}\n",
	}
	want := map[string]string{"unknown field": "replicaz", "bad kind": "workload.kind", "two rates": "exactly one", "missing decode": "deployment.decode"}
	for name, body := range cases {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		os.WriteFile(f, []byte(body), 0o644)
		_, _, err := run(t, "simulate", "-f", f)
		if err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: error %v, want %q", name, err, want[name])
		}
	}
}

// Every line of a batch is checked: nonsense gets an error naming the
// field, and the other lines still run.
func TestBatchRefusesNonsenseLines(t *testing.T) {
	lines := []string{`{"model":"Qwen/Qwen3-8B","concurrency":100000000}`, `null`, `{"workers":-1}`, `{"isl":4000} trailing`,
		`{"gpu_memory_utilization":1.5}`, `{"osl":0}`, `{"isl":1000,"osl":10,"isl":5}`, `{"model":"Qwen/Qwen3-8B","concurrency":4}`}
	got := estimateLines(t, lines)
	want := []string{"concurrency: 100000000 must be 1 to 100000", "is not a JSON object", "workers: -1", "text after the query",
		"gpu_memory_utilization: 1.5", "osl: 0", "line 7: isl: given twice", `"fits":true`}
	for i, w := range want {
		if i >= len(got) || !strings.Contains(got[i], w) {
			t.Errorf("line %d: want %q in the result", i+1, w)
		}
	}
}

// A prompt-only query (one output token) has no TPOT: the table says so
// instead of a TPOT of 0 ms and a decode speed of 0 tokens/s.
func TestEstimatePromptOnly(t *testing.T) {
	out, _, err := run(t, "estimate", "--model", "Qwen/Qwen3-8B", "--isl", "1000", "--osl", "1", "--concurrency", "4")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "none (osl 1: every request ends at its first token)") {
		t.Errorf("no prompt-only tpot row:\n%s", out)
	}
	for _, bad := range []string{"0.00 ms (p99", "per user", "tpot 0.00"} {
		if strings.Contains(out, bad) {
			t.Errorf("table shows %q for a prompt-only query:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "ttft") {
		t.Errorf("no ttft:\n%s", out)
	}
	js, _, err := run(t, "estimate", "--model", "Qwen/Qwen3-8B", "--isl", "1000", "--osl", "1", "--concurrency", "4", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["tpot_ms_interval"]; ok {
		t.Errorf("a prompt-only query has a TPOT interval: %v", m["tpot_ms_interval"])
	}
	if _, ok := m["ttft_ms_interval"]; !ok {
		t.Error("a prompt-only query lost its TTFT interval")
	}
}

// Counts written as floats (4.0, 1e3), as pandas or jq write them, are
// read as the whole numbers they are; a fraction, or a bare NaN as
// Python's json writes one, is refused by its key. A byte-order mark
// before the first line (Windows tools write one) is no part of it.
func TestBatchReadsWholeFloats(t *testing.T) {
	lines := []string{"\ufeff" + `{"model":"Qwen/Qwen3-8B","isl":1000,"osl":64,"concurrency":4,"tp":1}`,
		`{"model":"Qwen/Qwen3-8B","isl":1000.0,"osl":6.4e1,"concurrency":4.0,"tp":1.0}`,
		`{"model":"Qwen/Qwen3-8B","isl":1000.5,"osl":64,"concurrency":4}`,
		`{"model":"Qwen/Qwen3-8B","isl":1000,"osl":64,"concurrency":NaN}`}
	got := estimateLines(t, lines)
	if len(got) != 4 {
		t.Fatalf("%d results, want 4:\n%s", len(got), strings.Join(got, "\n"))
	}
	if got[0] != got[1] || !strings.Contains(got[0], `"fits":true`) {
		t.Errorf("whole floats read differently from integers:\n%s\n%s", got[0], got[1])
	}
	for i, w := range map[int]string{2: "isl: 1000.5 where a whole number is expected", 3: "concurrency: NaN is not a JSON number"} {
		if !strings.Contains(got[i], w) {
			t.Errorf("line %d: want %q in %s", i+1, w, got[i])
		}
	}
}

// estimateLines runs `estimate -f` over lines and returns its JSON lines.
func estimateLines(t *testing.T, lines []string) []string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "estimate", "-f", f, "-o", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// An estimate outside its own interval is explained, not left to read as
// a contradiction.
func TestOutsideInterval(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		iv   *[2]float64
		want string
	}{
		{10, &[2]float64{8, 12}, ""},
		{8, &[2]float64{8, 12}, ""},
		{7.9, &[2]float64{8, 12}, "tpot estimate is below it: held-out runs of this kind measured slower"},
		{12.5, &[2]float64{8, 12}, "tpot estimate is above it: held-out runs of this kind measured faster"},
		{10, nil, ""},
	} {
		got := outsideInterval("tpot", tc.v, tc.iv)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("outsideInterval(%g, %v) = %q, want %q", tc.v, tc.iv, got, tc.want)
		}
	}
	out, _, err := run(t, "estimate", "--model", "Qwen/Qwen3-8B", "--concurrency", "4", "--isl", "500", "--osl", "50")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "80% interval") {
			row = l
		}
	}
	if row == "" {
		t.Fatalf("no interval row:\n%s", out)
	}
	// The row agrees with the numbers it prints: an estimate outside is named.
	var ttft, tpot, tl, th, pl, ph float64
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ttft ") {
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "ttft")), "%f", &ttft)
		}
		if strings.HasPrefix(l, "tpot ") {
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "tpot")), "%f", &tpot)
		}
	}
	fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(row, "80% interval")), "ttft %f-%f ms, tpot %f-%f ms", &tl, &th, &pl, &ph)
	if th == 0 || ph == 0 || ttft == 0 || tpot == 0 {
		t.Fatalf("could not read the estimate and its interval:\n%s", out)
	}
	if below := tpot < pl; below != strings.Contains(row, "tpot estimate is below it") {
		t.Errorf("tpot %.2f against %.2f-%.2f: row %q", tpot, pl, ph, row)
	}
	if above := ttft > th; above != strings.Contains(row, "ttft estimate is above it") {
		t.Errorf("ttft %.1f against %.0f-%.0f: row %q", ttft, tl, th, row)
	}
}

// A .json file holding one array of queries is read one query an element,
// answered as the same queries written one a line; a pretty-printed
// object is refused with how to flatten it.
func TestBatchReadsAJSONArray(t *testing.T) {
	a := `{"model":"Qwen/Qwen3-8B","isl":500,"osl":32,"concurrency":2}`
	b := `{"model":"Qwen/Qwen3-8B","isl":500,"osl":32,"concurrency":4}`
	want := estimateLines(t, []string{a, b})
	got := estimateLines(t, []string{"[", "  " + a + ",", "  " + b, "]"})
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("array answers differ from line answers:\n%v\n%v", got, want)
	}
	got = estimateLines(t, []string{"[" + a + `, {"osl": 0}]`})
	if len(got) != 2 || !strings.Contains(got[1], "query 2: osl: 0") {
		t.Errorf("an element's error is not named by its place: %v", got)
	}
	dir := t.TempDir()
	for body, msg := range map[string]string{
		"[]":                               "an empty JSON array",
		`[{"concurrency": NaN}]`:           "concurrency: NaN is not a JSON number",
		"[" + a + ",":                      "not a JSON array of queries",
		"{\n" + `"concurrency": 2` + "\n}": "does not end on its line; each query is one JSON object on one line (jq -c",
	} {
		f := filepath.Join(dir, "q.json")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run(t, "estimate", "-f", f, "-o", "jsonl"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", body, err, msg)
		}
	}
}
