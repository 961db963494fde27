package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/configure"
)

// The JSON contract other tools read.
func TestConfigureJSONContract(t *testing.T) {
	out, _, err := run(t, "configure", "--model", "Qwen/Qwen3-32B", "--precision", "fp8", "--backend", "vllm", "--isl", "4000",
		"--osl", "500", "--ttft", "500", "--itl", "30", "--gpu", "h200_sxm", "--total-gpus", "8", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"best", "pareto", "candidates_evaluated", "candidates"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	best := m["best"].(map[string]any)
	for _, k := range []string{"mode", "gpus", "ttft_ms", "itl_ms", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "meets_slo"} {
		if _, ok := best[k]; !ok {
			t.Errorf("best lacks %q", k)
		}
	}
	pools := []string{"agg"}
	if best["mode"] == "disagg" {
		pools = []string{"prefill", "decode"}
	}
	for _, p := range pools {
		pool, ok := best[p].(map[string]any)
		if !ok {
			t.Fatalf("best lacks pool %q", p)
		}
		for _, k := range []string{"device", "tp", "workers", "batch"} {
			if _, ok := pool[k]; !ok {
				t.Errorf("best.%s lacks %q", p, k)
			}
		}
	}
}

func TestConfigureReportAndEmit(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "configure.html")
	out, stderr, err := run(t, "configure", "-f", "../../examples/serving-request.yaml", "--emit", "k8s", "--dra-driver", "nvidia", "--report", html)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "chosen: ") || !strings.HasPrefix(out, "apiVersion: resource.k8s.io/v1") ||
		!strings.Contains(out, "deviceClassName: gpu.nvidia.com") || !strings.Contains(out, "kind: Deployment") {
		t.Errorf("emit k8s: stderr %q, stdout starts %q", stderr, out[:min(len(out), 200)])
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<svg", "Pareto front", "Candidates", "candidate deployments evaluated"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "<link", "src=\"http", "href=\"http"} {
		if strings.Contains(page, bad) {
			t.Errorf("report is not self-contained: has %q", bad)
		}
	}
}

func TestConfigureErrors(t *testing.T) {
	dir := t.TempDir()
	badPool := filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(badPool, []byte("pool:\n- device: h100_sxm\n  count: 4\n  price: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile("../../examples/serving-request.yaml")
	if err != nil {
		t.Fatal(err)
	}
	badGPU, noISL := filepath.Join(dir, "gpu.yaml"), filepath.Join(dir, "isl.yaml")
	os.WriteFile(badGPU, []byte(strings.Replace(string(ref), "gpu: h200_sxm", "gpu: h300", 1)), 0o644)
	os.WriteFile(noISL, []byte(strings.Replace(string(ref), "isl: 4000", "isl: 0", 1)), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"configure", "--pick", "fastest"}, "--pick"},
		{[]string{"configure", "--emit", "helm"}, "--emit"},
		{[]string{"configure", "--mode", "hybrid"}, "--mode"},
		{[]string{"configure", "--pool", badPool}, `unknown field "pool[0].price"`},
		{[]string{"configure", "--pool", badPool, "--gpu", "l4"}, "not both"},
		{[]string{"configure", "--ttft", "5", "--itl", "1", "--emit", "k8s"}, "misses the SLO"},
		{[]string{"configure", "--spec-draft", "org/draft"}, "--spec-draft \"org/draft\": names the draft the emitted workers load"},
		{[]string{"configure", "--spec-tokens", "2"}, "spec_accept: required with spec_tokens 2"},
		{[]string{"configure", "--gpu", "h300"}, `--gpu: unknown GPU "h300"`},
		{[]string{"configure", "-f", "missing.yaml"}, "-f"},
		{[]string{"configure", "--top", "0"}, "--top: 0 would list no candidate"},
		{[]string{"configure", "-f", badGPU}, `spec.hardware.gpu: unknown GPU "h300"`},
		{[]string{"configure", "--request-rate", "5"}, "pick throughput fills the pool and reads no load"},
		{[]string{"configure", "--image", "repo/img:1"}, "--image applies with --emit only"},
		{[]string{"configure", "--device-selector", "true"}, "--device-selector applies with --pool-from-cluster only"},
		{[]string{"configure", "-f", noISL}, "spec.workload: isl 0 and osl 500"},
	}
	for _, tc := range cases {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

func TestDemo(t *testing.T) {
	html := filepath.Join(t.TempDir(), "demo.html")
	out, stderr, err := run(t, "demo", "--report", html)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"planner (peak", "static at peak", "static at base", "prefill 1 -> 2", "reaction window"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if page := string(b); !strings.Contains(page, "Planner decisions") || !strings.Contains(page, "<svg") || strings.Contains(page, "<script") {
		t.Error("demo report incomplete or not self-contained")
	}
	if _, _, err := run(t, "demo", "-f", "../../examples/burst.yaml"); err == nil || !strings.Contains(err.Error(), "planner section") {
		t.Errorf("a scenario without a planner: %v", err)
	}
}

// An SLO nothing meets prints the closest candidates but fails the command,
// and never prints an infinite latency.
func TestConfigureUnreachableFails(t *testing.T) {
	out, _, err := run(t, "configure", "--ttft", "10")
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("unreachable SLO: got %v, want an error", err)
	}
	if !strings.Contains(out, "UNREACHABLE") || strings.Contains(out, "Inf") {
		t.Errorf("output should show the miss without +Inf:\n%s", out)
	}
}

// A request longer than the model's context is answered with a note in
// the table and in the JSON.
func TestConfigureNotesContext(t *testing.T) {
	out, _, err := run(t, "configure", "--isl", "40000", "--osl", "1000", "--ttft", "100000", "--itl", "1000")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "note: isl + osl = 41000 tokens exceeds") {
		t.Errorf("table without the context note:\n%.1500s", out)
	}
	js, _, err := run(t, "configure", "--isl", "40000", "--osl", "1000", "--ttft", "100000", "--itl", "1000", "-o", "json")
	if err != nil || !strings.Contains(js, `"notes": [`) {
		t.Errorf("json without notes (%v):\n%.1500s", err, js)
	}
}

func TestConfigureModelConfig(t *testing.T) {
	out, _, err := run(t, "configure", "--model-config", "../catalog/testdata/qwen3-like-config.json", "--gpu", "h100_sxm", "--total-gpus", "2", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"model": "example/Qwen3-Tiny"`) {
		t.Errorf("the config.json model was not searched:\n%.400s", out)
	}
	if _, _, err := run(t, "configure", "--model-config", "nope.json"); err == nil || !strings.Contains(err.Error(), "--model-config") {
		t.Errorf("a missing config.json: got %v", err)
	}
}

// The decode batch the table reports is the one the manifest caps the
// engine at, and it is the largest inside the ITL.
func TestDecodeBatchMatchesManifest(t *testing.T) {
	out, _, err := run(t, "configure", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res configure.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	d := res.Best.Decode
	if d == nil {
		t.Fatalf("the reference pick %s is not disaggregated", configure.Describe(*res.Best))
	}
	if !strings.HasPrefix(d.Limit, fmt.Sprintf("batch %d (", d.Batch)) {
		t.Errorf("decode batch %d, limit %q", d.Batch, d.Limit)
	}
	yml, _, err := run(t, "configure", "--emit", "k8s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(yml, fmt.Sprintf("- --max-num-seqs\n        - \"%d\"", d.Batch)) {
		t.Errorf("the manifest does not cap decode at batch %d", d.Batch)
	}
}

// The example pool's A10 halves hold Qwen3-8B and take part in the search.
func TestExamplePoolUsesTheA10s(t *testing.T) {
	out, _, err := run(t, "configure", "--pool", "../../examples/pool.yaml", "--model", "Qwen/Qwen3-8B", "--isl", "2000", "--osl", "300",
		"--ttft", "800", "--itl", "40", "--top", "300", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res configure.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rejected {
		if strings.HasPrefix(r.Engine, "a10") {
			t.Errorf("%s %s rejected: %s", r.Role, r.Engine, r.Reason)
		}
	}
	used := 0
	for _, c := range res.Candidates {
		if strings.Contains(configure.Describe(c), "a10:1/2") && c.MeetsSLO {
			used++
		}
	}
	if used == 0 {
		t.Error("no candidate meeting the SLO uses the pool's A10 halves")
	}
}

// configure --emit with a draft writes it into the decoding workers.
func TestConfigureEmitsSpeculativeDecoding(t *testing.T) {
	out, stderr, err := run(t, "configure", "--emit", "k8s", "--spec-tokens", "2", "--spec-accept", "1.9", "--spec-draft", "org/eagle3-draft")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, `"method":"eagle3","model":"org/eagle3-draft","num_speculative_tokens":2`) {
		t.Errorf("no EAGLE-3 speculative config in the manifests:\n%s", out)
	}
}

// A target of 0 is none: the header says so instead of a target of 0 ms,
// and the percentile still names the statistic the table reports.
func TestConfigureHeaderWithoutTarget(t *testing.T) {
	out, _, err := run(t, "configure", "--model", "Qwen/Qwen3-8B", "--gpu", "h100_sxm", "--total-gpus", "2", "--isl", "1000",
		"--osl", "200", "--ttft", "0", "--ttft-percentile", "90", "--itl", "40")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(head, "TTFT p90 (no target), ITL mean <= 40 ms") {
		t.Errorf("header %q", head)
	}
	if strings.Contains(head, "<= 0 ms") {
		t.Errorf("header shows a target of 0 ms: %q", head)
	}
}
