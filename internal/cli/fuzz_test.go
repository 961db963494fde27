package cli

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// FuzzEstimateLine: any line of an estimate batch gets a result or an
// error for that line; never a panic.
func FuzzEstimateLine(f *testing.F) {
	for _, s := range []string{`{"model":"Qwen/Qwen3-8B","isl":500,"osl":50,"concurrency":2}`, `null`, `{"workers":-1}`,
		`{"isl":4000} x`, `{"mode":"disagg","prefill_tp":1,"decode_tp":1,"concurrency":3}`, `[1,2]`, `{"gpu":"a10","slice":"1/0"}`,
		`{"spec_tokens":3,"spec_accept":2.5,"concurrency":3}`, `{"spec_tokens":16,"spec_accept":17,"osl":2}`, `{"spec_tokens":1,"spec_accept":1e308}`,
		`{"breakdown":true,"isl":9000,"max_batched_tokens":64,"concurrency":3}`, `{"breakdown":true,"mode":"disagg","spec_tokens":2,"spec_accept":2}`,
		`{"isl":1e3,"osl":2.0,"concurrency":3.0}`, `{"tp":NaN}`, `{"isl":1000.5}`,
		`{"backend":"trtllm","kv_admission":"on-demand","concurrency":3}`, `{"kv_admission":"whole","mode":"disagg","concurrency":3}`, `{"kv_admission":7}`} {
		f.Add([]byte(s))
	}
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}
	base := estimate.Defaults()
	base.Concurrency, base.ISL, base.OSL = 2, 200, 20
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		_ = answerLine(env, base, true, b, "line 1")
	})
}

// FuzzArrayQueries: any input split into lines is read as a JSON array of
// queries, refused, or left to the line reader; never a panic, and an
// array read holds one query an element.
func FuzzArrayQueries(f *testing.F) {
	for _, s := range []string{"[\n{\"isl\":100}\n,{\"osl\":2}]", "[]", "[1,", "{\"isl\":1}", "  [ {\"a\":NaN} ]", "[[[]]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		var lines [][]byte
		for _, l := range strings.Split(s, "\n") {
			lines = append(lines, []byte(l))
		}
		qs, isArray, err := arrayQueries(lines)
		if !isArray && (err != nil || qs != nil) {
			t.Fatalf("not an array, yet queries %d and error %v", len(qs), err)
		}
		if isArray && err == nil && len(qs) == 0 {
			t.Fatal("an array read with no query and no error")
		}
	})
}
