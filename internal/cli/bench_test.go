package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeQueries writes n varied estimate queries, one JSON object a line.
func writeQueries(t testing.TB, n int) string {
	models := []string{"Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-30B-A3B"}
	gpus := []string{"h100_sxm", "h200_sxm", "b200_sxm", "l40s", "a100_80gb"}
	tps := []int{1, 2, 4, 8}
	isls := []int{256, 1024, 2000, 4000, 8000}
	osls := []int{128, 256, 500, 1000}
	concs := []int{1, 4, 16, 32, 64, 128}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"model":%q,"gpu":%q,"tp":%d,"isl":%d,"osl":%d,"concurrency":%d,"precision":"fp8"}`+"\n",
			models[i%5], gpus[(i/5)%5], tps[(i/25)%4], isls[(i/100)%5], osls[(i/7)%4], concs[(i/3)%6])
	}
	path := filepath.Join(t.TempDir(), "queries.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// BenchmarkEstimateBatch5000 answers 5,000 queries in-process, as
// `gpuplane estimate -f queries.jsonl -o jsonl` does.
func BenchmarkEstimateBatch5000(b *testing.B) {
	path := writeQueries(b, 5000)
	for b.Loop() {
		root := NewRoot(io.Discard, io.Discard)
		root.SetArgs([]string{"estimate", "-f", path, "-o", "jsonl"})
		if err := root.Execute(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBatchOfManyQueriesAnswersEveryLine(t *testing.T) {
	path := writeQueries(t, 300)
	out, _, err := run(t, "estimate", "-f", path, "-o", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n"); n != 300 {
		t.Fatalf("%d lines for 300 queries", n)
	}
}
