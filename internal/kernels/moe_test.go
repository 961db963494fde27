package kernels

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

var testGPU = GPU{MemBW: 4.8e12, BF16FLOPS: 989e12, FP8FLOPS: 1979e12}

const moeHeader = "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency\n"

func TestParseMoEKeepsWhatServingUses(t *testing.T) {
	csv := moeHeader +
		// block fp8: two kernels for one shape, the faster stands
		"X,1,H200,moe,a,fp8_block,64,4096,1536,8,128,1,1,balanced,0.30\n" +
		"X,1,H200,moe,b,fp8_block,64,4096,1536,8,128,1,1,balanced,0.20\n" +
		// per-tensor fp8 is dropped where block rows exist
		"X,1,H200,moe,a,fp8,64,4096,1536,8,128,1,1,balanced,0.10\n" +
		// skewed routing, expert parallelism, non-gated and min-latency kernels, unknown dtypes: left out
		"X,1,H200,moe,a,bfloat16,64,4096,1536,8,128,1,1,power_law_1.2,0.50\n" +
		"X,1,H200,moe,a,bfloat16,64,4096,1536,8,128,1,8,balanced,0.05\n" +
		"X,1,H200,moe,moe_torch_flow_nongated,bfloat16,64,4096,1536,8,128,1,1,balanced,0.05\n" +
		"X,1,H200,moe,moe_torch_flow_min_latency,bfloat16,64,4096,1536,8,128,1,1,balanced,0.05\n" +
		"X,1,H200,moe,a,w4a8_awq,64,4096,1536,8,128,1,1,balanced,0.05\n" +
		// kept: bf16 with tensor parallelism inside the experts
		"X,1,H200,moe,a,bfloat16,64,4096,1536,8,128,2,1,balanced,0.40\n"
	rows, err := parseMoE("t.csv", strings.NewReader(csv), "h200_sxm", testGPU)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows %+v, want the block fp8 shape and the bf16 tp2 shape", len(rows), rows)
	}
	bf, fp := rows[0], rows[1]
	if bf.Precision != catalog.BF16 || fp.Precision != catalog.FP8 {
		t.Fatalf("precisions %s, %s", bf.Precision, fp.Precision)
	}
	if fp.Seconds != 0.20e-3 || fp.Kernel != "b" || fp.Peak != testGPU.FP8FLOPS {
		t.Errorf("fp8 row %+v: want the faster kernel b at 0.2 ms against the fp8 peak", fp)
	}
	if want := 3 * 4096 * 1536 / 2.0; bf.Shape.ExpertParams != want || bf.Peak != testGPU.BF16FLOPS {
		t.Errorf("bf16 tp2 row %+v: want %v weights per GPU against the bf16 peak", bf, want)
	}

	// A table with only per-tensor fp8 keeps it.
	rows, err = parseMoE("t.csv", strings.NewReader(moeHeader+"X,1,H200,moe,a,fp8,64,4096,1536,8,128,1,1,balanced,0.10\n"), "h200_sxm", testGPU)
	if err != nil || len(rows) != 1 || rows[0].Precision != catalog.FP8 || rows[0].Seconds != 0.10e-3 {
		t.Fatalf("per-tensor only: %v %+v", err, rows)
	}
}

func TestParseMoEErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"X,1,H,moe,a,bfloat16,0,4096,1536,8,128,1,1,balanced,0.1\n", "num_tokens"},
		{"X,1,H,moe,a,bfloat16,64,4096,1536,8,128,1e12,1,balanced,0.1\n", "moe_tp_size"},
		{"X,1,H,moe,a,bfloat16,64,4096,1536,200,128,1,1,balanced,0.1\n", "topk 200 exceeds num_experts 128"},
		{"X,1,H,moe,a,bfloat16,64,4096,1536,8,128,1,1,balanced,-1\n", "latency"},
		{"X,1,H,moe,a,bfloat16,64,4096,NaN,8,128,1,1,balanced,0.1\n", "inter_size"},
	} {
		_, err := parseMoE("t.csv", strings.NewReader(moeHeader+c.body), "s", testGPU)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: got %v, want an error naming %q and the line", c.body, err, c.want)
		}
	}
	if _, err := parseMoE("t.csv", strings.NewReader("a,b\n1,2\n"), "s", testGPU); err == nil || !strings.Contains(err.Error(), "no column") {
		t.Errorf("missing columns: %v", err)
	}
}

// synthetic rows priced by a known kernel: the fit must find a kernel that
// predicts them (the oracle) over the shapes serving uses.
func syntheticMoE(k perf.MoEKernel) []MoERow {
	var rows []MoERow
	for _, tokens := range []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384} {
		for _, e := range [][3]float64{{4096, 1536, 128}, {7168, 2048, 256}, {4096, 14336, 8}, {2048, 768, 128}} {
			for _, tp := range []float64{1, 2, 4, 8} {
				topk := 8.0
				if e[2] == 8 {
					topk = 2
				}
				s := perf.MoEShape{Tokens: tokens, TopK: topk, Experts: e[2], ExpertParams: 3 * e[0] * e[1] / tp, WeightBytes: 1, Eager: true, Balanced: true}
				rows = append(rows, MoERow{System: "x", Precision: catalog.FP8, Shape: s, Peak: 1979e12, BW: 4.8e12, Seconds: k.Seconds(s, 1979e12, 4.8e12)})
			}
		}
	}
	return rows
}

func TestFitMoERecoversAKnownKernel(t *testing.T) {
	for _, truth := range []perf.MoEKernel{
		{Compute: 0.35, Bandwidth: 0.8, RowsHalf: 40, LaunchUs: 30, ParamsHalf: 5e6},
		{Compute: 0.7, Bandwidth: 0.5, RowsHalf: 10, LaunchUs: 60, ParamsHalf: 2e7},
	} {
		rows := syntheticMoE(truth)
		k, err := FitMoE(rows)
		if err != nil {
			t.Fatal(err)
		}
		if s := ScoreMoE(k, rows); s.MAPEPct > 2 {
			t.Errorf("truth %+v: fitted %+v predicts its own rows at %.1f%% MAPE, want <= 2%%", truth, k, s.MAPEPct)
		}
		if dense := ScoreMoE(perf.MoEKernel{Compute: 0.94, Bandwidth: 0.8, RowsHalf: 24}, rows); dense.MAPEPct < 20 {
			t.Errorf("a wrong kernel scores %.1f%%: the score cannot tell kernels apart", dense.MAPEPct)
		}
	}
	if _, err := FitMoE(nil); err == nil {
		t.Error("fitting no rows succeeded")
	}
}

func TestHoldMoEIsStableAndAboutOneInTen(t *testing.T) {
	rows := syntheticMoE(perf.MoEKernel{Compute: 0.5, Bandwidth: 0.7, RowsHalf: 30, LaunchUs: 20, ParamsHalf: 1e7})
	fit1, held1 := HoldMoE(rows, 10)
	fit2, held2 := HoldMoE(rows, 10)
	if len(fit1)+len(held1) != len(rows) || len(held1) != len(held2) || len(fit1) != len(fit2) {
		t.Fatalf("split %d+%d of %d, again %d+%d", len(fit1), len(held1), len(rows), len(fit2), len(held2))
	}
	if frac := float64(len(held1)) / float64(len(rows)); frac < 0.04 || frac > 0.18 {
		t.Errorf("held out %.0f%%, want about 10%%", 100*frac)
	}
}

// The summaries predict measured kernel rows they were not fitted on, and
// far better than pricing experts as dense GEMMs (the model without them).
func TestMoESummariesOnHeldOutTableRows(t *testing.T) {
	if testing.Short() {
		t.Skip("fits every MoE table")
	}
	dir := sharedtest.Path(t, "reference", "kernels")
	fam := perf.MustDefaultParams().Families[catalog.Hopper]
	var fitted, dense, n float64
	for _, sys := range []string{"h100_sxm", "h200_sxm"} {
		for _, be := range []string{"vllm", "trtllm", "sglang"} {
			rows, err := LoadMoE(dir, sys, be)
			if err != nil {
				t.Fatal(err)
			}
			var fp8 []MoERow
			for _, r := range rows {
				if r.Precision == catalog.FP8 {
					fp8 = append(fp8, r)
				}
			}
			g := MoEGroup{Family: catalog.Hopper, Backend: perf.Backend(be), Precision: catalog.FP8, Rows: fp8}
			res, err := ValidateMoE(g, fam, catalog.FP8)
			if err != nil {
				t.Fatalf("%s/%s: %v", sys, be, err)
			}
			t.Logf("%s/%s fp8: %d rows, held out %d: %.1f%% (bias %+.1f%%), as dense GEMMs %.1f%%",
				sys, be, len(fp8), res.HeldOut.N, res.HeldOut.MAPEPct, res.HeldOut.BiasPct, res.Dense.MAPEPct)
			if res.HeldOut.MAPEPct > 35 || math.Abs(res.HeldOut.BiasPct) > 15 {
				t.Errorf("%s/%s fp8: held-out MAPE %.1f%%, bias %+.1f%%; want <= 35%% and within 15%%", sys, be, res.HeldOut.MAPEPct, res.HeldOut.BiasPct)
			}
			w := float64(res.HeldOut.N)
			fitted += w * res.HeldOut.MAPEPct
			dense += w * res.Dense.MAPEPct
			n += w
		}
	}
	if fitted/n > 0.6*dense/n || fitted/n > 25 {
		t.Errorf("pooled held-out MAPE %.1f%% against %.1f%% as dense GEMMs; want <= 25%% and well below", fitted/n, dense/n)
	}
}

func FuzzParseMoE(f *testing.F) {
	f.Add([]byte(moeHeader + "X,1,H200,moe,a,fp8_block,64,4096,1536,8,128,1,1,balanced,0.30\n"))
	f.Add([]byte(moeHeader + "X,1,H200,moe,a,bfloat16,1,1,1,1,1,1,1,uniform,1e-9\n"))
	f.Add([]byte(moeHeader + "X,1,H200,moe,a,nvfp4,1e9,1e9,1e9,1e9,1e9,1e9,1,balanced,1e300\n"))
	f.Add([]byte(moeHeader + "X,1,H200,moe,a,fp8_block,64,4096,1536,8,128,1,8,power_law_1.2,0.30\n"))
	f.Add([]byte(moeHeader + "X,1,H200,moe,a,fp8_block,1,1,1,1,1e9,1,1e9,power_law_1.01,1e-9\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var rows []MoERow
		for _, kind := range []moeRowKind{summaryRows, skewedEPRows} {
			got, err := parseMoERows("fuzz.csv", bytes.NewReader(b), "s", testGPU, kind)
			if err == nil {
				rows = append(rows, got...)
			}
		}
		k := perf.MoEKernel{Compute: 0.5, Bandwidth: 0.7, RowsHalf: 30, LaunchUs: 20, ParamsHalf: 1e7}
		for _, r := range rows {
			if !(r.Seconds > 0) || r.Shape.TopK > r.Shape.Experts {
				t.Fatalf("accepted %+v", r)
			}
			if v := k.Seconds(r.Shape, r.Peak, r.BW); !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("row %+v prices at %v", r, v)
			}
		}
	})
}

// Every distinct shape comes out once, with its own latency, whatever the
// map order the rows were gathered in.
func TestParseMoEKeepsEveryShape(t *testing.T) {
	var b strings.Builder
	b.WriteString(moeHeader)
	want := map[float64]float64{}
	for i := 1; i <= 200; i++ {
		b.WriteString("X,1,H200,moe,a,bfloat16," + strconv.Itoa(i) + ",4096,1536,8,128,1,1,balanced," + strconv.FormatFloat(float64(i)/100, 'f', -1, 64) + "\n")
		want[float64(i)] = float64(i) / 100 * 1e-3
	}
	for range 5 {
		rows, err := parseMoE("t.csv", strings.NewReader(b.String()), "h200_sxm", testGPU)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d", len(rows), len(want))
		}
		seen := map[float64]bool{}
		for _, r := range rows {
			if seen[r.Shape.Tokens] || math.Abs(r.Seconds-want[r.Shape.Tokens]) > 1e-15 {
				t.Fatalf("row %v tokens at %v s: duplicated or not its own latency (%v s)", r.Shape.Tokens, r.Seconds, want[r.Shape.Tokens])
			}
			seen[r.Shape.Tokens] = true
		}
	}
}

// The skewed expert-parallel rows: power-law routing, whole experts on
// each of ep GPUs, decode batch sizes; both skews of a shape kept.
func TestParseMoESkewedEPRows(t *testing.T) {
	csv := moeHeader +
		"X,1,H200,moe,a,fp8_block,8,4096,1536,8,128,1,1,balanced,0.10\n" +
		"X,1,H200,moe,a,fp8_block,8,4096,1536,8,128,1,8,power_law_1.01,0.09\n" +
		"X,1,H200,moe,a,fp8_block,8,4096,1536,8,128,1,8,power_law_1.2,0.08\n" +
		// left out: tp inside the experts, past decode sizes, balanced,
		// no expert parallelism, a min-latency kernel
		"X,1,H200,moe,a,fp8_block,8,4096,1536,8,128,2,4,power_law_1.01,0.07\n" +
		"X,1,H200,moe,a,fp8_block,128,4096,1536,8,128,1,8,power_law_1.01,0.20\n" +
		"X,1,H200,moe,a,fp8_block,8,4096,1536,8,128,1,8,balanced,0.06\n" +
		"X,1,H200,moe,a,fp8_block,8,4096,1536,8,128,1,1,power_law_1.01,0.30\n" +
		"X,1,H200,moe,moe_torch_flow_min_latency,fp8_block,8,4096,1536,8,128,1,8,power_law_1.01,0.02\n"
	rows, err := parseMoERows("t.csv", strings.NewReader(csv), "h200_sxm", testGPU, skewedEPRows)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || math.Abs(rows[0].Seconds-0.08e-3) > 1e-12 || math.Abs(rows[1].Seconds-0.09e-3) > 1e-12 {
		t.Fatalf("got %+v, want the two power-law rows at tp 1, ep 8, 8 tokens", rows)
	}
	want := perf.MoEShape{Tokens: 8, TopK: 8, Experts: 128, ExpertParams: 3 * 4096 * 1536 / 8, SliceParams: 3 * 4096 * 1536, WeightBytes: catalog.FP8.Bytes(), Eager: true, Ranks: 8}
	if rows[0].Shape != want {
		t.Errorf("shape %+v, want %+v", rows[0].Shape, want)
	}
	// The summary's reading of the same table is the balanced ep 1 row.
	sum, err := parseMoE("t.csv", strings.NewReader(csv), "h200_sxm", testGPU)
	if err != nil || len(sum) != 1 || math.Abs(sum[0].Seconds-0.10e-3) > 1e-12 || sum[0].Shape.Ranks != 0 {
		t.Errorf("summary rows %+v (%v), want the balanced ep 1 row alone", sum, err)
	}
	_, err = parseMoERows("t.csv", strings.NewReader(moeHeader+"X,1,H,moe,a,fp8_block,8,4096,1536,8,128,1,256,power_law_1.01,0.1\n"), "s", testGPU, skewedEPRows)
	if err == nil || !strings.Contains(err.Error(), "moe_ep_size 256 exceeds num_experts 128") {
		t.Errorf("ep past the experts: %v", err)
	}
}

// Scored at the busiest rank, rows priced so by a kernel come out exact;
// at the mean rank they read fast.
func TestScoreSkewedEP(t *testing.T) {
	k := perf.MoEKernel{Compute: 0.3, Bandwidth: 0.8, RowsHalf: 30, LaunchUs: 30, ParamsHalf: 5e6}
	var rows []MoERow
	for _, n := range []float64{1, 2, 8, 32, 64} {
		for _, ep := range []float64{4, 8} {
			s := perf.MoEShape{Tokens: n, TopK: 8, Experts: 256, ExpertParams: 3 * 7168 * 2048 / ep, SliceParams: 3 * 7168 * 2048, WeightBytes: 1, Eager: true, Ranks: ep}
			rows = append(rows, MoERow{Shape: s, Peak: 1979e12, BW: 4.8e12, Seconds: k.Seconds(s, 1979e12, 4.8e12)})
		}
	}
	mean, busiest := scoreSkewedEP(k, rows)
	if busiest.N != 10 || busiest.MAPEPct > 1e-9 {
		t.Errorf("busiest rank %+v, want the 10 rows exact", busiest)
	}
	if mean.N != 10 || !(mean.MAPEPct > 5) || !(mean.BiasPct < 0) {
		t.Errorf("mean rank %+v, want the rows read fast", mean)
	}
	if rows[0].Shape.Ranks != 4 {
		t.Error("scoring cleared the rows' ranks in place")
	}
}

// MXFP4 rows are fp4 weights summarised apart from NVFP4's: one shape
// measured in both stays two rows, keyed mxfp4 and fp4.
func TestParseMoEKeepsMXFP4Apart(t *testing.T) {
	g := testGPU
	g.FP4FLOPS = 9000e12
	csv := moeHeader +
		"X,1,B200,moe,a,nvfp4,16,2880,2880,4,128,1,1,balanced,0.05\n" +
		"X,1,B200,moe,b,w4a8_mxfp4_mxfp8,16,2880,2880,4,128,1,1,balanced,0.04\n" +
		"X,1,B200,moe,c,w4a16_mxfp4,16,2880,2880,4,128,1,1,balanced,0.06\n"
	rows, err := parseMoE("t.csv", strings.NewReader(csv), "b200_sxm", g)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %+v, want the nvfp4 row and the faster mxfp4 row", rows)
	}
	for _, r := range rows {
		if r.Precision != catalog.FP4 || r.Peak != g.FP4FLOPS {
			t.Errorf("%s row: precision %s at peak %g, want fp4 weights at the fp4 peak", r.Kernel, r.Precision, r.Peak)
		}
		want := catalog.FP4
		if r.MXFP4 {
			want = perf.MXFP4
			if r.Kernel != "b" {
				t.Errorf("mxfp4 row from kernel %s, want the faster b", r.Kernel)
			}
		}
		if r.Key() != want {
			t.Errorf("%s row keyed %s, want %s", r.Kernel, r.Key(), want)
		}
	}
}
