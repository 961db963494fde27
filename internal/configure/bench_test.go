package configure

import "testing"

// BenchmarkReference is the reference search: Qwen3-32B fp8 on
// 8 x h200_sxm, 4000/500 tokens, TTFT <= 500 ms, ITL <= 30 ms.
func BenchmarkReference(b *testing.B) {
	var res *Result
	for b.Loop() {
		res = mustSearch(b, reference())
	}
	b.ReportMetric(float64(res.CandidatesEvaluated), "candidates")
	b.ReportMetric(float64(res.Simulations), "simulations")
}

// BenchmarkPool64 searches a 64-device pool of three kinds (whole H100s,
// H100 MIG 3g.40gb partitions, A10 1/2 vGPUs) with prices.
func BenchmarkPool64(b *testing.B) {
	r := Request{Model: "Qwen/Qwen3-8B", Precision: "fp8", Backend: "vllm", ISL: 2000, OSL: 300, SLA: SLA{TTFTms: 800, ITLms: 40},
		Pool: []PoolEntry{{Device: "h100_sxm", Count: 16, PricePerHour: 3}, {Device: "h100_sxm:3g.40gb", Count: 24, PricePerHour: 1.4},
			{Device: "a10:1/2", Count: 24, PricePerHour: 0.5}}}
	var res *Result
	for b.Loop() {
		res = mustSearch(b, r)
	}
	b.ReportMetric(float64(res.CandidatesEvaluated), "candidates")
	b.ReportMetric(float64(res.Simulations), "simulations")
}
