package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A named model without --precision is priced at its own precision (a
// quantised checkpoint's, or the native one), as --precision's help says;
// the bare command keeps the reference scenario's fp8.
func TestPrecisionFollowsTheNamedModel(t *testing.T) {
	prec := func(args ...string) string {
		t.Helper()
		out, _, err := run(t, append([]string{"estimate", "--concurrency", "2", "--isl", "500", "--osl", "50", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Precision string `json:"precision"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Precision
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "fp8"},
		{[]string{"--model", "Qwen/Qwen3-4B-AWQ", "--gpu", "a10"}, "w4a16"},
		{[]string{"--model", "Qwen/Qwen3-32B-FP8"}, "fp8"},
		{[]string{"--model", "Qwen/Qwen3-8B"}, "bf16"},
		{[]string{"--model", "Qwen/Qwen3-8B", "--precision", "fp8"}, "fp8"},
	} {
		if got := prec(tc.args...); got != tc.want {
			t.Errorf("estimate %s: precision %s, want %s", strings.Join(tc.args, " "), got, tc.want)
		}
	}

	// Lines of estimate -f: a line naming a model without a precision gets
	// the model's; a line naming neither keeps the flags'; --precision wins.
	f := filepath.Join(t.TempDir(), "q.jsonl")
	lines := `{"model":"Qwen/Qwen3-8B","isl":500,"osl":50,"concurrency":2}
{"isl":500,"osl":50,"concurrency":2}
{"model":"Qwen/Qwen3-4B-AWQ","gpu":"a10","isl":500,"osl":50,"concurrency":2}
{"model":"Qwen/Qwen3-8B","precision":"fp8","isl":500,"osl":50,"concurrency":2}
`
	if err := os.WriteFile(f, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	batch := func(args ...string) []string {
		t.Helper()
		out, _, err := run(t, append([]string{"estimate", "-f", f, "-o", "jsonl"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var r struct {
				Precision string `json:"precision"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Precision)
		}
		return got
	}
	if got, want := strings.Join(batch(), " "), "bf16 fp8 w4a16 fp8"; got != want {
		t.Errorf("estimate -f: precisions %s, want %s", got, want)
	}
	if got, want := strings.Join(batch("--precision", "fp8"), " "), "fp8 fp8 fp8 fp8"; got != want {
		t.Errorf("estimate -f --precision fp8: precisions %s, want %s", got, want)
	}
}
