package kernels

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// syntheticAttention prices prefill and decode shapes on two systems with
// a known summary.
func syntheticAttention(truth AttnSummary) []AttnRow {
	var rows []AttnRow
	for _, sys := range []struct {
		name     string
		peak, bw float64
	}{{"h100_sxm", 989e12, 3.35e12}, {"h200_sxm", 989e12, 4.8e12}} {
		for _, heads := range [][2]float64{{8, 1}, {32, 8}, {64, 8}} {
			for _, batch := range []float64{1, 4, 16, 64, 256} {
				for _, l := range []float64{16, 64, 256, 1024, 4096, 16384} {
					for _, decode := range []bool{false, true} {
						r := AttnRow{System: sys.name, Backend: "vllm", Decode: decode, Heads: heads[0], KVHeads: heads[1], HeadDim: 128,
							Batch: batch, Len: l, KVBytes: 2, Peak: sys.peak, BW: sys.bw}
						r.Seconds = truth.Seconds(r)
						rows = append(rows, r)
					}
				}
			}
		}
	}
	return rows
}

func TestFitAttentionRecoversAKnownSummary(t *testing.T) {
	for _, truth := range []AttnSummary{
		{Compute: 0.45, PrefillBandwidth: 0.3, CallUs: 15, Bandwidth: 0.7, DecodeCallUs: 9, DecodeSeqUs: 0.05},
		{Compute: 0.7, PrefillBandwidth: 0.5, CallUs: 5, Bandwidth: 0.5, DecodeCallUs: 20, DecodeSeqUs: 0.2},
	} {
		rows := syntheticAttention(truth)
		a, err := FitAttention(rows)
		if err != nil {
			t.Fatal(err)
		}
		sc := ScoreAttention(a, rows)
		if sc.Prefill.MAPEPct > 1 || sc.Decode.MAPEPct > 1 {
			t.Errorf("truth %+v: fitted %+v predicts its own rows at %.2f%% / %.2f%%, want <= 1%%", truth, a, sc.Prefill.MAPEPct, sc.Decode.MAPEPct)
		}
		for name, pair := range map[string][2]float64{"compute": {a.Compute, truth.Compute}, "bandwidth": {a.Bandwidth, truth.Bandwidth}, "call": {a.CallUs, truth.CallUs}} {
			if math.Abs(pair[0]/pair[1]-1) > 0.05 {
				t.Errorf("truth %+v: fitted %s %.4g, want within 5%% of %.4g", truth, name, pair[0], pair[1])
			}
		}
		wrong := ScoreAttention(AttnSummary{Compute: 0.83, Bandwidth: 0.5}, rows)
		if wrong.Prefill.MAPEPct < 15 || wrong.Decode.MAPEPct < 15 {
			t.Errorf("a wrong summary scores %.1f%% / %.1f%%: the score cannot tell summaries apart", wrong.Prefill.MAPEPct, wrong.Decode.MAPEPct)
		}
	}
	if _, err := FitAttention(syntheticAttention(AttnSummary{Compute: 0.5, Bandwidth: 0.5})[:10]); err == nil {
		t.Error("fitting ten rows succeeded")
	}
}

func TestValidateAttentionHoldsOutRowsAndSystems(t *testing.T) {
	truth := AttnSummary{Compute: 0.5, PrefillBandwidth: 0.3, CallUs: 12, Bandwidth: 0.65, DecodeCallUs: 10, DecodeSeqUs: 0.08}
	rows := syntheticAttention(truth)
	cur := AttnSummary{Compute: 0.83, Bandwidth: 0.5}
	res, err := ValidateAttention("hopper", rows, &cur)
	if err != nil {
		t.Fatal(err)
	}
	if res.Prefill+res.Decode != len(rows) || res.Prefill != res.Decode || len(res.Systems) != 2 {
		t.Fatalf("result %+v", res)
	}
	for phase, sc := range map[string]Score{"prefill": res.HeldOut.Prefill, "decode": res.HeldOut.Decode} {
		if sc.N == 0 || sc.N > res.Prefill/4 || sc.MAPEPct > 2 {
			t.Errorf("%s: held out %d rows at %.1f%%, want about one in ten within 2%%", phase, sc.N, sc.MAPEPct)
		}
	}
	if res.Embedded == nil || res.Embedded.Prefill.N != res.HeldOut.Prefill.N || res.Embedded.Prefill.MAPEPct < 20 || res.Embedded.Decode.MAPEPct < 20 {
		t.Errorf("the parameters in use scored %+v on the held-out rows, want the same rows and a clearly worse MAPE", res.Embedded)
	}
	for _, s := range res.Systems {
		if sc := res.BySystem[s]; sc.Prefill.N == 0 || sc.Prefill.MAPEPct > 2 || sc.Decode.MAPEPct > 2 {
			t.Errorf("%s predicted from the other system: %+v", s, sc)
		}
	}
}

// A decode table is kept or dropped whole, by the bandwidth its largest
// shape implies, as perf judges tables it prices from; windowed and FP8
// prefill tables are not what the summary prices.
func TestAttnRowsKeepsWhatPerfPrices(t *testing.T) {
	gpu := mustGPU(t, "h100_sxm")
	bw := gpu.MemoryBandwidthGBps * 1e9
	s := newSet("h100_sxm", "vllm", "test", GPU{})
	s.ContextAttention = map[AttnKey]*Grid{
		{AttnDtype: "bfloat16", KVDtype: "bfloat16", HeadDim: 128}:              NewGrid(4),
		{AttnDtype: "fp8", KVDtype: "fp8", HeadDim: 128}:                        NewGrid(4),
		{AttnDtype: "bfloat16", KVDtype: "bfloat16", HeadDim: 128, Window: 128}: NewGrid(4),
	}
	for _, g := range s.ContextAttention {
		g.Add([]float64{32, 8, 1024, 1}, 0.2)
	}
	key := AttnKey{KVDtype: "bfloat16", HeadDim: 128}
	s.GenerationAttention = map[AttnKey]*Grid{key: NewGrid(4)}
	// 8 KV heads stream at 60% of the bandwidth; 1 KV head at 3x the spec.
	for _, b := range []float64{1, 64} {
		for _, l := range []float64{1024, 8192} {
			bytes := b * l * 2 * 8 * 128 * 2
			s.GenerationAttention[key].Add([]float64{32, 8, b, l}, 1e3*bytes/(0.6*bw))
			s.GenerationAttention[key].Add([]float64{32, 1, b, l}, 1e3*bytes/8/(3*bw))
		}
	}
	var prefill, decode int
	for _, r := range AttnRows(s, gpu) {
		if r.Decode {
			decode++
			if r.KVHeads != 8 {
				t.Errorf("kept a decode row faster than the GPU streams: %+v", r)
			}
		} else {
			prefill++
		}
	}
	if prefill != 1 || decode != 4 {
		t.Errorf("kept %d prefill and %d decode rows, want the one BF16 full-attention prompt and the four plausible decode rows", prefill, decode)
	}
}

// The real tables: the summaries predict held-out rows better than the
// end-to-end efficiencies, though a compact form leaves far more error
// than the tables' own interpolation.
func TestAttentionSummariesOnTheTables(t *testing.T) {
	if testing.Short() {
		t.Skip("reads and fits the Hopper attention tables")
	}
	dir := sharedtest.Path(t, "reference", "kernels")
	var rows []AttnRow
	for _, sys := range []string{"h100_sxm", "h200_sxm"} {
		s, err := Load(dir, sys, "vllm")
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, AttnRows(s, mustGPU(t, sys))...)
	}
	res, err := ValidateAttention("hopper", rows, &AttnSummary{Compute: 0.83, Bandwidth: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hopper vllm: %d prefill / %d decode rows, held out %.1f%% / %.1f%%, end-to-end efficiencies %.1f%% / %.1f%%; fitted %+v",
		res.Prefill, res.Decode, res.HeldOut.Prefill.MAPEPct, res.HeldOut.Decode.MAPEPct, res.Embedded.Prefill.MAPEPct, res.Embedded.Decode.MAPEPct, res.Summary)
	for phase, pair := range map[string][2]Score{"prefill": {res.HeldOut.Prefill, res.Embedded.Prefill}, "decode": {res.HeldOut.Decode, res.Embedded.Decode}} {
		if pair[0].MAPEPct > 45 || pair[0].MAPEPct > pair[1].MAPEPct {
			t.Errorf("%s: held out %.1f%% against %.1f%% at the end-to-end efficiencies", phase, pair[0].MAPEPct, pair[1].MAPEPct)
		}
	}
}

func mustGPU(t *testing.T, name string) *catalog.GPU {
	t.Helper()
	gpu, err := catalog.MustDefault().GPU(name)
	if err != nil {
		t.Fatal(err)
	}
	return gpu
}
