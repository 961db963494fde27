package plannerlive

import (
	"math"
	"testing"
)

// FuzzParseConfig: planner run files decode or fail.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("planner: {ttftMs: 500, itlMs: 30}\nengine: {model: Qwen/Qwen3-8B, gpu: h100_sxm}\nmetrics: {scrape: {prefill: [\"http://127.0.0.1:1/metrics\"], decode: [\"http://127.0.0.1:2/metrics\"]}}\ntargets: {prefill: {version: v1, resource: deployments, namespace: a, name: p}, decode: {version: v1, resource: deployments, namespace: a, name: d}}\n"))
	f.Add([]byte("planner: {cooldownSeconds: -1}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseConfig(b)
	})
}

// FuzzBucketsQuantile: any histogram gives a finite, non-negative value.
func FuzzBucketsQuantile(f *testing.F) {
	f.Add(0.1, 5.0, 1.0, 9.0, 0.9)
	f.Add(math.Inf(1), 3.0, 0.5, math.NaN(), 0.5)
	f.Fuzz(func(t *testing.T, b1, c1, b2, c2, q float64) {
		v := buckets{b1: c1, b2: c2, math.Inf(1): math.Max(c1, c2)}.quantile(q)
		if math.IsNaN(v) || math.IsInf(v, 0) && !math.IsInf(b1, 0) && !math.IsInf(b2, 0) {
			t.Fatalf("quantile %g of %v", v, []float64{b1, c1, b2, c2, q})
		}
	})
}
