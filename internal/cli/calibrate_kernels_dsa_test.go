package cli

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// --only dsa takes the indexer cost from the attention-block tables and
// writes it under the family and backend, leaving the rest as it was.
func TestCalibrateKernelsIndexer(t *testing.T) {
	moe := perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6}
	dir := kernelTree(t, moe)
	vdir := filepath.Join(dir, "h200_sxm", "vllm", "0.19.0")
	header := "framework,version,device,op_name,kernel_source,model,architecture,mla_dtype,kv_cache_dtype,gemm_type,num_heads,batch_size,isl,tp_size,step,latency"
	for table, spec := range map[string]struct {
		model string
		ms    float64
	}{"dsa_generation_module_perf.csv.gz": {"zai-org/GLM-5", 0.22}, "mla_generation_module_perf.csv.gz": {"deepseek-ai/DeepSeek-V3", 0.11}} {
		writeGzip(t, filepath.Join(vdir, table), func(zw io.Writer) {
			fmt.Fprintln(zw, header)
			for _, b := range []int{1, 2, 4, 8, 16} {
				for _, step := range []int{127, 511, 1023} {
					fmt.Fprintf(zw, "VLLM,0.19.0,H200,m,default,%s,A,bfloat16,fp8,fp8_block,16,%d,1,1,%d,%g\n", spec.model, b, step, spec.ms)
				}
			}
		})
	}
	// The prompt side: an excess of 40 us a call, 0.1 us a token and 30 ps
	// a pair under the 2,048-key window.
	for table, model := range map[string]string{"dsa_context_module_perf.csv.gz": "zai-org/GLM-5", "mla_context_module_perf.csv.gz": "deepseek-ai/DeepSeek-V3"} {
		writeGzip(t, filepath.Join(vdir, table), func(zw io.Writer) {
			fmt.Fprintln(zw, header)
			for _, b := range []float64{1, 2, 4, 8} {
				for _, n := range []float64{512, 1024, 2048, 4096, 8192} {
					ms := 1e-4 * b * n
					if model == "zai-org/GLM-5" {
						k := min(n, 2048)
						ms += 0.04 + 1e-4*b*n + 3e-8*b*(k*(k+1)/2+(n-k)*2048)
					}
					fmt.Fprintf(zw, "VLLM,0.19.0,H200,m,default,%s,A,bfloat16,fp8,fp8_block,16,%g,%g,1,0,%g\n", model, b, n, ms)
				}
			}
		})
	}
	out := filepath.Join(t.TempDir(), "params.yaml")
	table, stderr, err := run(t, "calibrate", "kernels", "--kernels", dir, "--only", "dsa", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(table, "INDEXER US") || !strings.Contains(table, "dsa - mla blocks") || !strings.Contains(table, "PAIR PS") || strings.Contains(table, "MAPE AS DENSE GEMM") {
		t.Errorf("want the indexer table alone:\n%s", table)
	}
	p, err := perf.LoadParams(out)
	if err != nil {
		t.Fatalf("written parameters do not load: %v", err)
	}
	h := p.Families[catalog.Hopper]
	if got := h.SparseIndexerUs[perf.VLLM]; math.Abs(got-110) > 1e-6 {
		t.Errorf("hopper vllm indexer %.3f us, want 110 (220 - 110)", got)
	}
	if c := h.SparsePrefill[perf.VLLM]; c == nil || math.Abs(c.CallUs/40-1) > 0.05 || math.Abs(c.TokenUs/0.1-1) > 0.05 || math.Abs(c.PairPs/30-1) > 0.05 {
		t.Errorf("hopper vllm prompt side %+v, want 40 us a call, 0.1 us a token, 30 ps a pair", c)
	}
	before := perf.MustDefaultParams().Families[catalog.Hopper]
	if h.GEMM[catalog.FP8] != before.GEMM[catalog.FP8] || h.AttentionCompute != before.AttentionCompute {
		t.Errorf("--only dsa moved other summaries: gemm fp8 %v -> %v", before.GEMM[catalog.FP8], h.GEMM[catalog.FP8])
	}
	empty := kernelTree(t, moe)
	if _, _, err := run(t, "calibrate", "kernels", "--kernels", empty, "--only", "dsa"); err == nil || !strings.Contains(err.Error(), "no dsa_generation_module_perf rows") {
		t.Errorf("--only dsa without block tables: %v", err)
	}
}
