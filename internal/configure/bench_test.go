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

// pool1000 is a cluster-sized pool of four kinds scaled to n devices.
func pool1000(n int) Request {
	r := reference()
	r.Pool = []PoolEntry{{Device: "h100_sxm", Count: n * 4 / 10}, {Device: "h200_sxm", Count: n * 3 / 10},
		{Device: "h100_sxm:3g.40gb", Count: n * 2 / 10}, {Device: "a10:1/2", Count: n / 10}}
	return r
}

// BenchmarkClusterScale searches the same four device kinds at 8 and at
// 1,000 devices: the search's cost must follow the kinds and parallelisms,
// not the device count. It reports the ratio of the two times.
func BenchmarkClusterScale(b *testing.B) {
	timeOf := func(n int) float64 {
		best := 0.0
		for range 3 {
			t0 := nowNanos()
			mustSearch(b, pool1000(n))
			if d := float64(nowNanos() - t0); best == 0 || d < best {
				best = d
			}
		}
		return best
	}
	var small, large float64
	for b.Loop() {
		small, large = timeOf(10), timeOf(1000)
	}
	b.ReportMetric(small/1e6, "ms/10-devices")
	b.ReportMetric(large/1e6, "ms/1000-devices")
	b.ReportMetric(large/small, "ratio")
}

// BenchmarkMoEWithDP searches DeepSeek-R1 fp4 on 8 x b200_sxm (1024/1024,
// TTFT <= 2 s, ITL <= 50 ms), whose engines include attention-DP workers:
// their profiles simulate thousands of users over 8 ranks.
func BenchmarkMoEWithDP(b *testing.B) {
	r := Request{Model: "deepseek-ai/DeepSeek-R1", Precision: "fp4", Backend: "trtllm", ISL: 1024, OSL: 1024,
		SLA: SLA{TTFTms: 2000, ITLms: 50}, Pool: []PoolEntry{{Device: "b200_sxm", Count: 8}}}
	var res *Result
	for b.Loop() {
		res = mustSearch(b, r)
	}
	b.ReportMetric(float64(res.CandidatesEvaluated), "candidates")
	b.ReportMetric(float64(res.Simulations), "simulations")
}
