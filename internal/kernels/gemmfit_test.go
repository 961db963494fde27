package kernels

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// syntheticGEMM prices a grid of layer-sized shapes on two systems with
// a known summary.
func syntheticGEMM(truth GEMMSummary, p catalog.Precision) []GEMMRow {
	var rows []GEMMRow
	for _, sys := range []struct {
		name     string
		peak, bw float64
	}{{"h100_sxm", 989e12, 3.35e12}, {"h200_sxm", 989e12, 4.8e12}} {
		for _, m := range []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192} {
			for _, nk := range [][2]float64{{1024, 4096}, {4096, 4096}, {6144, 4096}, {4096, 14336}, {28672, 4096}, {8192, 8192}} {
				r := GEMMRow{System: sys.name, Backend: "vllm", Precision: p, M: m, N: nk[0], K: nk[1], Peak: sys.peak, BW: sys.bw}
				r.Seconds = truth.Seconds(r)
				rows = append(rows, r)
			}
		}
	}
	return rows
}

func TestFitGEMMRecoversAKnownSummary(t *testing.T) {
	for _, truth := range []GEMMSummary{
		{Efficiency: 0.55, Bandwidth: 0.8, CallUs: 8},
		{Efficiency: 0.8, Bandwidth: 0.6, CallUs: 3},
	} {
		rows := syntheticGEMM(truth, catalog.BF16)
		g, err := FitGEMM(rows)
		if err != nil {
			t.Fatal(err)
		}
		if s := ScoreGEMM(g, rows); s.MAPEPct > 1 {
			t.Errorf("truth %+v: fitted %+v predicts its own rows at %.2f%% MAPE, want <= 1%%", truth, g, s.MAPEPct)
		}
		if math.Abs(g.Efficiency/truth.Efficiency-1) > 0.05 || math.Abs(g.Bandwidth/truth.Bandwidth-1) > 0.05 {
			t.Errorf("truth %+v: fitted %+v, want efficiency and bandwidth within 5%%", truth, g)
		}
		if wrong := ScoreGEMM(GEMMSummary{Efficiency: 0.94, Bandwidth: 0.81}, rows); wrong.MAPEPct < 15 {
			t.Errorf("a wrong summary scores %.1f%%: the score cannot tell summaries apart", wrong.MAPEPct)
		}
	}
	if _, err := FitGEMM(nil); err == nil {
		t.Error("fitting no rows succeeded")
	}
}

func TestValidateGEMMHoldsOutRowsAndSystems(t *testing.T) {
	truth := GEMMSummary{Efficiency: 0.6, Bandwidth: 0.75, CallUs: 6}
	rows := syntheticGEMM(truth, catalog.FP8)
	cur := GEMMSummary{Efficiency: 0.94, Bandwidth: 0.81}
	res, err := ValidateGEMM("hopper", rows, &cur)
	if err != nil {
		t.Fatal(err)
	}
	if res.Precision != catalog.FP8 || res.Rows != len(rows) || len(res.Systems) != 2 {
		t.Fatalf("result %+v", res)
	}
	if res.HeldOut.N == 0 || res.HeldOut.N > len(rows)/4 || res.HeldOut.MAPEPct > 2 {
		t.Errorf("held out %d of %d rows at %.1f%%, want about one in ten within 2%%", res.HeldOut.N, len(rows), res.HeldOut.MAPEPct)
	}
	if res.Embedded == nil || res.Embedded.N != res.HeldOut.N || res.Embedded.MAPEPct < 20 {
		t.Errorf("the parameters in use scored %+v on the held-out rows, want the same rows and a clearly worse MAPE", res.Embedded)
	}
	for _, s := range res.Systems {
		if sc := res.BySystem[s]; sc.N == 0 || sc.MAPEPct > 2 {
			t.Errorf("%s predicted from the other system: %+v", s, sc)
		}
	}
	mixed := append(syntheticGEMM(truth, catalog.BF16)[:20], rows...)
	if _, err := ValidateGEMM("hopper", mixed, nil); err == nil || !strings.Contains(err.Error(), "rows of bf16 and fp8") {
		t.Errorf("mixed precisions: %v", err)
	}
}

// The real tables: the GEMM summaries predict held-out layer-sized rows
// far better than the end-to-end efficiencies did (FP8 pools per-tensor
// and block-scaled kernels, which the model does not tell apart).
func TestGEMMSummariesOnTheTables(t *testing.T) {
	if testing.Short() {
		t.Skip("reads and fits the Hopper GEMM tables")
	}
	dir := sharedtest.Path(t, "reference", "kernels")
	cat := catalog.MustDefault()
	byPrec := map[catalog.Precision][]GEMMRow{}
	for _, sys := range []string{"h100_sxm", "h200_sxm"} {
		gpu, err := cat.GPU(sys)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Load(dir, sys, "vllm")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range GEMMRows(s, gpu) {
			if r.N < 1024 || r.K < 1024 {
				t.Fatalf("row %+v is not layer-sized", r)
			}
			byPrec[r.Precision] = append(byPrec[r.Precision], r)
		}
	}
	for _, p := range []catalog.Precision{catalog.BF16, catalog.FP8} {
		res, err := ValidateGEMM("hopper", byPrec[p], &GEMMSummary{Efficiency: map[catalog.Precision]float64{catalog.BF16: 0.91, catalog.FP8: 0.94}[p], Bandwidth: 0.81})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("hopper/%s vllm: %d rows, held out %.1f%% (bias %+.1f%%), end-to-end efficiencies %.1f%%; fitted %+v",
			p, res.Rows, res.HeldOut.MAPEPct, res.HeldOut.BiasPct, res.Embedded.MAPEPct, res.Summary)
		if res.HeldOut.MAPEPct > 30 || res.HeldOut.MAPEPct > res.Embedded.MAPEPct {
			t.Errorf("hopper/%s: held out %.1f%% against %.1f%% at the end-to-end efficiencies", p, res.HeldOut.MAPEPct, res.Embedded.MAPEPct)
		}
	}
}
