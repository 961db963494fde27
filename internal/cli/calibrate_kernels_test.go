package cli

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/kernels"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// kernelTree writes a one-system kernel tree whose MoE table is priced by
// a known kernel, so the fit has something definite to find.
func kernelTree(t *testing.T, truth perf.MoEKernel) string {
	t.Helper()
	dir := t.TempDir()
	sys := filepath.Join(dir, "h200_sxm")
	vdir := filepath.Join(sys, "vllm", "0.19.0")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "system.yaml"), []byte("gpu:\n  mem_bw: 4800000000000\n  bfloat16_tc_flops: 989000000000000\n  fp8_tc_flops: 1978000000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeGzip(t, filepath.Join(vdir, "moe_perf.csv.gz"), func(zw io.Writer) {
		fmt.Fprintln(zw, "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency")
		for _, n := range []float64{1, 4, 16, 64, 256, 1024, 4096, 16384} {
			for _, tp := range []float64{1, 2, 4, 8} {
				for _, e := range [][2]float64{{2048, 768}, {4096, 1536}} {
					s := perf.MoEShape{Tokens: n, TopK: 8, Experts: 128, ExpertParams: 3 * e[0] * e[1] / tp, WeightBytes: catalog.FP8.Bytes(), Eager: true, Balanced: true}
					ms := 1e3 * truth.Seconds(s, 1978e12, 4.8e12)
					fmt.Fprintf(zw, "VLLM,0.19.0,H200,moe,vllm_fused_moe,fp8_block,%g,%g,%g,8,128,%g,1,balanced,%g\n", n, e[0], e[1], tp, ms)
				}
			}
		}
		// Skewed expert-parallel rows at decode sizes, priced by the same
		// kernel at the busiest rank: scored, never fitted.
		for _, n := range []float64{1, 4, 16, 64} {
			for _, ep := range []float64{2, 8} {
				s := perf.MoEShape{Tokens: n, TopK: 8, Experts: 128, ExpertParams: 3 * 4096 * 1536 / ep, SliceParams: 3 * 4096 * 1536, WeightBytes: catalog.FP8.Bytes(), Eager: true, Ranks: ep}
				ms := 1e3 * truth.Seconds(s, 1978e12, 4.8e12)
				fmt.Fprintf(zw, "VLLM,0.19.0,H200,moe,vllm_fused_moe,fp8_block,%g,4096,1536,8,128,1,%g,power_law_1.01,%g\n", n, ep, ms)
			}
		}
	})
	return dir
}

func TestCalibrateKernelsFitsAndWrites(t *testing.T) {
	truth := perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6}
	dir := kernelTree(t, truth)
	out := filepath.Join(t.TempDir(), "params.yaml")
	stdout, stderr, err := run(t, "calibrate", "kernels", "--kernels", dir, "--out", out, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		MoE []struct {
			Family    string         `json:"family"`
			Backend   string         `json:"backend"`
			Precision string         `json:"precision"`
			Kernel    perf.MoEKernel `json:"kernel"`
			HeldOut   struct {
				N    int     `json:"n"`
				MAPE float64 `json:"mape_pct"`
			} `json:"held_out"`
			Table struct {
				N    int     `json:"n"`
				MAPE float64 `json:"mape_pct"`
			} `json:"table_interpolation"`
			Mean    kernels.Score `json:"skewed_ep_mean_rank"`
			Busiest kernels.Score `json:"skewed_ep_busiest_rank"`
		} `json:"moe"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if len(rep.MoE) != 1 || rep.MoE[0].Family != "hopper" || rep.MoE[0].Backend != "vllm" || rep.MoE[0].Precision != "fp8" {
		t.Fatalf("want one hopper/vllm/fp8 summary, got %+v", rep.MoE)
	}
	if r := rep.MoE[0]; r.HeldOut.N == 0 || r.HeldOut.MAPE > 3 {
		t.Errorf("held-out rows %d at %.1f%% MAPE; the table is priced by one kernel, want <= 3%%", r.HeldOut.N, r.HeldOut.MAPE)
	}
	// The op model's figure on the same held-out rows is reported (its
	// accuracy on the real tables is TestHeldOutMoERows'; this synthetic
	// tree has a few token counts a shape, too sparse to interpolate well).
	if r := rep.MoE[0]; r.Table.N == 0 || !(r.Table.MAPE < 50) {
		t.Errorf("table interpolation: %d held-out rows at %.1f%% MAPE, want some, under 50%%", r.Table.N, r.Table.MAPE)
	}
	// The skewed expert-parallel rows were priced at the busiest rank: the
	// summary fitted on the balanced rows (which never show it random
	// routing) comes closest there, and reads them fast at the mean rank.
	if r := rep.MoE[0]; r.Busiest.N != 8 || r.Mean.N != 8 || !(r.Busiest.MAPEPct < 0.6*r.Mean.MAPEPct) || !(r.Mean.BiasPct < r.Busiest.BiasPct && r.Mean.BiasPct < -10) {
		t.Errorf("skewed expert-parallel rows: busiest rank %+v, mean rank %+v; want 8 rows, the busiest rank well closer, the mean rank fast", r.Busiest, r.Mean)
	}
	if !strings.Contains(stderr, "[1/1] hopper/vllm/fp8") || !strings.Contains(stderr, "wrote "+out) {
		t.Errorf("progress and the written file not reported: %s", stderr)
	}
	p, err := perf.LoadParams(out)
	if err != nil {
		t.Fatalf("written parameters do not load: %v", err)
	}
	h200, err := catalog.MustDefault().GPU("h200_sxm")
	if err != nil {
		t.Fatal(err)
	}
	k := p.MoEKernelFor(h200, perf.VLLM, catalog.FP8)
	if k == nil || k.Rows != 64 || k.ComputeCapability != "9" {
		t.Fatalf("written summary %+v, want one fitted on 64 rows of compute capability 9", k)
	}
	table, _, err := run(t, "calibrate", "kernels", "--kernels", dir)
	if err != nil || !strings.Contains(table, "MAPE AS DENSE GEMM") || !strings.Contains(table, "MAPE TABLE") || !strings.Contains(table, "MAPE BUSIEST RANK") || !strings.Contains(table, "hopper") {
		t.Errorf("table: %v\n%s", err, table)
	}
}

func TestCalibrateKernelsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "kernels"}, "--kernels: required"},
		{[]string{"calibrate", "kernels", "--kernels", t.TempDir()}, "no system folders"},
	} {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	// A tree whose tables are too few to fit says so and writes nothing wrong.
	dir := kernelTree(t, perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6})
	gz := filepath.Join(dir, "h200_sxm", "vllm", "0.19.0", "moe_perf.csv.gz")
	f, _ := os.Create(gz)
	zw := gzip.NewWriter(f)
	fmt.Fprintln(zw, "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency")
	fmt.Fprintln(zw, "VLLM,0.19.0,H200,moe,vllm_fused_moe,fp8_block,8,4096,1536,8,128,1,1,balanced,0.1")
	zw.Close()
	f.Close()
	_, stderr, err := run(t, "calibrate", "kernels", "--kernels", dir)
	if err != nil || !strings.Contains(stderr, "1 rows, fewer than 40: no summary") {
		t.Errorf("too few rows: %v\n%s", err, stderr)
	}
}

// writeGEMMTable adds to a kernel tree's h200_sxm/vllm a GEMM table of BF16
// and FP8 layer shapes priced by known summaries, plus small shapes that
// the fit must leave out.
func writeGEMMTable(t *testing.T, dir string, truth map[string]kernels.GEMMSummary) {
	t.Helper()
	h200, err := catalog.MustDefault().GPU("h200_sxm")
	if err != nil {
		t.Fatal(err)
	}
	writeGzip(t, filepath.Join(dir, "h200_sxm", "vllm", "0.19.0", "gemm_perf.csv.gz"), func(zw io.Writer) {
		fmt.Fprintln(zw, "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency")
		for dtype, s := range truth {
			p := catalog.BF16
			if dtype != "bfloat16" {
				p = catalog.FP8
			}
			for _, m := range []float64{1, 4, 16, 64, 256, 1024, 4096, 16384} {
				for _, nk := range [][2]float64{{1024, 4096}, {5120, 5120}, {4096, 14336}, {28672, 4096}, {8192, 1024}, {512, 512}} {
					r := kernels.GEMMRow{Precision: p, M: m, N: nk[0], K: nk[1], Peak: h200.PeakTFLOPS(p) * 1e12, BW: h200.MemoryBandwidthGBps * 1e9}
					fmt.Fprintf(zw, "VLLM,0.19.0,H200,gemm,vllm_default,%s,%g,%g,%g,%g\n", dtype, m, nk[0], nk[1], 1e3*s.Seconds(r))
				}
			}
		}
	})
}

func TestCalibrateKernelsFitsGEMMs(t *testing.T) {
	dir := kernelTree(t, perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6})
	truth := map[string]kernels.GEMMSummary{
		"bfloat16": {Efficiency: 0.78, Bandwidth: 0.85, CallUs: 4},
		"fp8":      {Efficiency: 0.5, Bandwidth: 0.7, CallUs: 9},
	}
	writeGEMMTable(t, dir, truth)
	out := filepath.Join(t.TempDir(), "params.yaml")
	stdout, stderr, err := run(t, "calibrate", "kernels", "--kernels", dir, "--only", "gemm", "--out", out, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		GEMM []kernels.GEMMResult `json:"gemm"`
		MoE  []json.RawMessage    `json:"moe"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if len(rep.GEMM) != 2 || len(rep.MoE) != 0 {
		t.Fatalf("want hopper bf16 and fp8 summaries and no MoE fit, got %s", stdout)
	}
	for _, r := range rep.GEMM {
		// 5 layer shapes a precision at 8 token counts: the 512 x 512
		// shapes are not layer-sized and stay out.
		if r.Family != "hopper" || r.Rows != 40 || r.HeldOut.MAPEPct > 2 {
			t.Errorf("%s/%s: %d rows, held out %.1f%%; want 40 rows within 2%%", r.Family, r.Precision, r.Rows, r.HeldOut.MAPEPct)
		}
	}
	p, err := perf.LoadParams(out)
	if err != nil {
		t.Fatalf("written parameters do not load: %v", err)
	}
	h := p.Families[catalog.Hopper]
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"gemm.bf16", h.GEMM[catalog.BF16], 0.78}, {"gemm.fp8", h.GEMM[catalog.FP8], 0.5},
		{"gemmBandwidth", h.GEMMBandwidth, 0.85}, {"gemmPrecisionBandwidth.fp8", h.GEMMPrecisionBandwidth[catalog.FP8], 0.7},
		{"gemmCallUs.fp8", h.GEMMCallUs[catalog.FP8], 9},
	} {
		if math.Abs(c.got/c.want-1) > 0.05 {
			t.Errorf("written %s = %.3f, want %.3f", c.name, c.got, c.want)
		}
	}
	h200, _ := catalog.MustDefault().GPU("h200_sxm")
	if mk := p.MoEKernelFor(h200, perf.VLLM, catalog.FP8); mk == nil || mk.Rows == 64 {
		t.Errorf("--only gemm refitted the MoE summary: %+v", mk)
	}
	table, _, err := run(t, "calibrate", "kernels", "--kernels", dir)
	if err != nil || !strings.Contains(table, "MAPE EMBEDDED BEFORE") || !strings.Contains(table, "MAPE AS DENSE GEMM") {
		t.Errorf("both tables: %v\n%s", err, table)
	}
	if _, _, err := run(t, "calibrate", "kernels", "--kernels", dir, "--only", "experts"); err == nil || !strings.Contains(err.Error(), `--only: "experts" is not gemm, attention, moe or dsa`) {
		t.Errorf("--only experts: %v", err)
	}
	empty := kernelTree(t, perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6})
	if _, _, err := run(t, "calibrate", "kernels", "--kernels", empty, "--only", "gemm"); err == nil || !strings.Contains(err.Error(), "no layer-sized gemm_perf rows") {
		t.Errorf("--only gemm without GEMM tables: %v", err)
	}
}

// writeAttentionTables prices prefill and decode attention on the H200 of a
// kernel tree with a known summary.
func writeAttentionTables(t *testing.T, dir string, truth kernels.AttnSummary) {
	t.Helper()
	h200, err := catalog.MustDefault().GPU("h200_sxm")
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"context_attention", "generation_attention"} {
		writeGzip(t, filepath.Join(dir, "h200_sxm", "vllm", "0.19.0", table+"_perf.csv.gz"), func(zw io.Writer) {
			fmt.Fprintln(zw, "framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,beam_width,attn_dtype,kv_cache_dtype,step,window_size,latency")
			decode := table == "generation_attention"
			for _, heads := range [][2]float64{{8, 1}, {32, 8}, {64, 8}} {
				for _, b := range []float64{1, 4, 16, 64, 256} {
					for _, l := range []float64{64, 256, 1024, 4096, 16384} {
						r := kernels.AttnRow{Decode: decode, Heads: heads[0], KVHeads: heads[1], HeadDim: 128, Batch: b, Len: l, KVBytes: 2,
							Peak: h200.PeakTFLOPS(catalog.BF16) * 1e12, BW: h200.MemoryBandwidthGBps * 1e9}
						isl, step := l, 0.0
						if decode {
							isl, step = 1, l-1
						}
						fmt.Fprintf(zw, "VLLM,0.19.0,NVIDIA H200,%s,vllm_flash_attn,%g,%g,%g,%g,128,1,bfloat16,bfloat16,%g,0,%g\n", table, b, isl, heads[0], heads[1], step, 1e3*truth.Seconds(r))
					}
				}
			}
		})
	}
}

// writeGzip writes a gzip file of what fill prints.
func writeGzip(t *testing.T, path string, fill func(io.Writer)) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	fill(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCalibrateKernelsFitsAttention(t *testing.T) {
	dir := kernelTree(t, perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6})
	truth := kernels.AttnSummary{Compute: 0.55, PrefillBandwidth: 0.35, CallUs: 12, Bandwidth: 0.7, DecodeCallUs: 9, DecodeSeqUs: 0.06}
	writeAttentionTables(t, dir, truth)
	out := filepath.Join(t.TempDir(), "params.yaml")
	stdout, stderr, err := run(t, "calibrate", "kernels", "--kernels", dir, "--only", "attention", "--out", out, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		GEMM      []json.RawMessage    `json:"gemm"`
		Attention []kernels.AttnResult `json:"attention"`
		MoE       []json.RawMessage    `json:"moe"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if len(rep.Attention) != 1 || len(rep.GEMM) != 0 || len(rep.MoE) != 0 {
		t.Fatalf("want one hopper attention summary and nothing else, got %s", stdout)
	}
	r := rep.Attention[0]
	if r.Family != "hopper" || r.Prefill != 75 || r.Decode != 75 || r.HeldOut.Prefill.MAPEPct > 2 || r.HeldOut.Decode.MAPEPct > 2 {
		t.Errorf("%s: %d prefill and %d decode rows, held out %.1f%% / %.1f%%; want 75 of each within 2%%",
			r.Family, r.Prefill, r.Decode, r.HeldOut.Prefill.MAPEPct, r.HeldOut.Decode.MAPEPct)
	}
	p, err := perf.LoadParams(out)
	if err != nil {
		t.Fatalf("written parameters do not load: %v", err)
	}
	h := p.Families[catalog.Hopper]
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"attentionCompute", h.AttentionCompute, truth.Compute}, {"attentionPrefillBandwidth", h.AttentionPrefillBandwidth, truth.PrefillBandwidth},
		{"attentionCallUs", h.AttentionCallUs, truth.CallUs}, {"attentionBandwidth", h.AttentionBandwidth, truth.Bandwidth},
		{"decodeAttentionCallUs", h.DecodeAttentionCallUs, truth.DecodeCallUs},
	} {
		if math.Abs(c.got/c.want-1) > 0.05 {
			t.Errorf("written %s = %.3f, want %.3f", c.name, c.got, c.want)
		}
	}
	if embedded := perf.MustDefaultParams().Families[catalog.Hopper]; h.GEMM[catalog.FP8] != embedded.GEMM[catalog.FP8] {
		t.Errorf("--only attention moved the GEMM efficiency: %v, embedded %v", h.GEMM[catalog.FP8], embedded.GEMM[catalog.FP8])
	}
	table, _, err := run(t, "calibrate", "kernels", "--kernels", dir, "--only", "attention")
	if err != nil || !strings.Contains(table, "prefill") || !strings.Contains(table, "decode") || !strings.Contains(table, "SEQ US") {
		t.Errorf("attention table: %v\n%s", err, table)
	}
	if _, _, err := run(t, "calibrate", "kernels", "--kernels", kernelTree(t, perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6}), "--only", "attention"); err == nil || !strings.Contains(err.Error(), "no full-attention") {
		t.Errorf("--only attention without attention tables: %v", err)
	}
}

// calibrate ops scores a tree's tables on their own held-out rows: here
// one MoE table priced by one kernel at eight token counts, which its own
// rows answer within 25% (the grid is sparse: a factor of 4 between rows).
func TestCalibrateOps(t *testing.T) {
	dir := kernelTree(t, perf.MoEKernel{Compute: 0.3, Bandwidth: 0.75, RowsHalf: 40, LaunchUs: 35, ParamsHalf: 8e6})
	stdout, stderr, err := run(t, "calibrate", "ops", "--kernels", dir, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var acc kernels.TreeAccuracy
	if err := json.Unmarshal([]byte(stdout), &acc); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if acc.HoldOneIn != 10 || len(acc.Pooled) != 1 || acc.Pooled[0].Op != kernels.OpMoE || acc.Pooled[0].N == 0 || acc.Pooled[0].MAPE > 25 {
		t.Fatalf("want the MoE table pooled within 25%%, got %+v", acc)
	}
	if len(acc.Sets) != 1 || acc.Sets[0].System != "h200_sxm" || acc.Sets[0].Backend != "vllm" {
		t.Errorf("sets %+v, want h200_sxm/vllm", acc.Sets)
	}
	if !strings.Contains(stderr, "[1/1] h200_sxm/vllm") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	table, _, err := run(t, "calibrate", "ops", "--kernels", dir)
	if err != nil || !strings.Contains(table, "pooled") || !strings.Contains(table, "MAPE") {
		t.Errorf("table output %q (%v)", table, err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "ops"}, "--kernels: required"},
		{[]string{"calibrate", "ops", "--kernels", dir, "--hold-one-in", "1"}, "--hold-one-in: 1; use 2 to 1000"},
		{[]string{"calibrate", "ops", "--kernels", t.TempDir()}, "no system folders"},
		{[]string{"calibrate", "ops", "--kernels", dir, "--hold-one-in", "1000"}, "no table row was held out"},
		{[]string{"calibrate", "ops", "--kernels", dir, "--borrowed"}, "no two measured GPUs share an architecture"},
	} {
		if _, _, err := run(t, bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want one containing %q", bad.args, err, bad.want)
		}
	}
}
