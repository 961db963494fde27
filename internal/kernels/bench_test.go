package kernels

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// BenchmarkLoad is the cost --kernels adds to a command per system and
// backend it touches: reading and indexing its gzip CSV tables.
func BenchmarkLoad(b *testing.B) {
	dir := sharedtest.Path(b, "reference", "kernels")
	for b.Loop() {
		if _, err := Load(dir, "h100_sxm", "trtllm"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadCached is the same set read back from the cache folder (the
// second and later runs of a command): compare with BenchmarkLoad.
func BenchmarkLoadCached(b *testing.B) {
	dir := sharedtest.Path(b, "reference", "kernels")
	cache := b.TempDir()
	if _, err := loadCached(dir, cache, "h100_sxm", "trtllm"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := loadCached(dir, cache, "h100_sxm", "trtllm"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMoESummaryCached is BenchmarkMoESummary on later runs: the set
// and the fitted summary read back from the cache.
func BenchmarkMoESummaryCached(b *testing.B) {
	dir := sharedtest.Path(b, "reference", "kernels")
	cache := b.TempDir()
	s, err := loadCached(dir, cache, "h200_sxm", "vllm")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.MoEKernel("fp8"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := loadCached(dir, cache, "h200_sxm", "vllm")
		if err != nil {
			b.Fatal(err)
		}
		if k, err := s.MoEKernel("fp8"); err != nil || k == nil {
			b.Fatalf("no summary: %v", err)
		}
	}
}

// BenchmarkGEMMTime is one GEMM lookup (interpolated between grid points).
func BenchmarkGEMMTime(b *testing.B) {
	s, err := Load(sharedtest.Path(b, "reference", "kernels"), "h100_sxm", "trtllm")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s.GEMMTime("fp8", 37, 10240, 5120)
	}
}

// BenchmarkMoESummary is what --kernels adds the first time an MoE model
// runs on a system and backend: reading its moe_perf table and fitting the
// summary of one precision.
func BenchmarkMoESummary(b *testing.B) {
	dir := sharedtest.Path(b, "reference", "kernels")
	for b.Loop() {
		s, err := Load(dir, "h200_sxm", "vllm")
		if err != nil {
			b.Fatal(err)
		}
		if k, err := s.MoEKernel("fp8"); err != nil || k == nil {
			b.Fatalf("no summary: %v", err)
		}
	}
}
