package perf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

func parallelWorker(t *testing.T, model, gpu string, tp, dp, ep int) *Worker {
	t.Helper()
	return catalogWorker(t, model, gpu, "", Config{Backend: TRTLLM, Weights: catalog.FP8, TP: tp, DP: dp, EP: ep}, MustDefaultParams())
}

// Attention DP keeps attention whole on each rank and spreads the experts
// over every rank's GPUs: weights per GPU sit between TP over the same GPUs
// and one GPU holding everything.
func TestAttentionDPWeights(t *testing.T) {
	const model = "deepseek-ai/DeepSeek-R1"
	dp := parallelWorker(t, model, "b200_sxm", 1, 8, 8)
	tp := parallelWorker(t, model, "b200_sxm", 8, 1, 8)
	m := dp.Config().Model
	if dp.expertParams != tp.expertParams {
		t.Errorf("experts per GPU: dp8 %g, tp8 %g; both spread over 8 GPUs", dp.expertParams, tp.expertParams)
	}
	// Everything but the routed experts (attention, dense and shared
	// MLPs, router, embeddings) is whole on each tp-1 rank: dp8 holds what
	// tp1 holds of it, tp8 an eighth.
	nonExpert := func(w *Worker) float64 {
		return w.WeightsBytesPerGPU() - float64(m.Layers)*w.moeLayerFrac*w.routedExperts*w.expertParams*w.wBytes
	}
	one := parallelWorker(t, model, "b200_sxm", 1, 1, 1)
	if got, want := nonExpert(dp), nonExpert(one); got < 0.999*want || got > 1.001*want {
		t.Errorf("dp8 rank holds %.2f GB besides experts, tp1 %.2f GB", got/1e9, want/1e9)
	}
	if dp.WeightsBytesPerGPU() <= tp.WeightsBytesPerGPU() || dp.WeightsBytesPerGPU() >= one.WeightsBytesPerGPU()/2 {
		t.Errorf("weights per GPU: dp8 %.1f GB, tp8 %.1f GB, one GPU %.1f GB", dp.WeightsBytesPerGPU()/1e9, tp.WeightsBytesPerGPU()/1e9, one.WeightsBytesPerGPU()/1e9)
	}
}

// One DP rank's experts serve all ranks' tokens: its MoE costs what the
// whole group's tokens cost, and the all-to-all has a latency even at tp 1.
func TestAttentionDPMoEServesEveryRank(t *testing.T) {
	const model = "deepseek-ai/DeepSeek-R1"
	one := parallelWorker(t, model, "b200_sxm", 1, 8, 8)
	if one.moe(32, true) <= one.moe(4, true) {
		t.Errorf("MoE of 32 tokens a rank %g s should exceed 4 tokens' %g s", one.moe(32, true), one.moe(4, true))
	}
	if one.a2aLatency <= 0 {
		t.Errorf("tp 1 ep 8: all-to-all latency %g, want > 0", one.a2aLatency)
	}
	noEP := parallelWorker(t, model, "b200_sxm", 1, 8, 1)
	if one.moe(4, true) <= noEP.moe(4, true) {
		t.Errorf("ep 8 MoE %g s should add all-to-all time to %g s", one.moe(4, true), noEP.moe(4, true))
	}
	// Past the node the all-to-all crosses the network.
	wide := parallelWorker(t, model, "b200_sxm", 1, 64, 64)
	if wide.a2aNodeShare >= 1 || wide.moe(4, true)-wide.moeCompute(4, true) <= one.moe(4, true)-one.moeCompute(4, true) {
		t.Errorf("ep 64 on 8-GPU nodes: %.0f%% of traffic in the node, all-to-all %g s vs %g s at ep 8", 100*wide.a2aNodeShare,
			wide.moe(4, true)-wide.moeCompute(4, true), one.moe(4, true)-one.moeCompute(4, true))
	}
}

// Tensor-parallel attention hands every GPU of a rank all of the rank's
// tokens, so experts spread over those GPUs need no token exchange: the
// layer ends with the tp all-reduce a dense MLP has. Only experts outside
// the rank's GPUs are reached by an all-to-all, which the rank's GPUs split.
func TestExpertExchangeFollowsTheRank(t *testing.T) {
	const model = "deepseek-ai/DeepSeek-R1"
	const tokens = 8192.0
	a2a := func(w *Worker) float64 { return w.moe(tokens, true) - w.moeCompute(tokens, true) }
	tp := parallelWorker(t, model, "h200_sxm", 8, 1, 8)
	if got := a2a(tp); got != 0 {
		t.Errorf("tp 8 ep 8: all-to-all %g s, want none (every GPU holds the tokens)", got)
	}
	if got, want := tp.allReduce(tokens), 2*tp.allReduceOnce(tokens); got != want {
		t.Errorf("tp 8 ep 8: layer all-reduces %g s, want two (%g s): attention's and the experts' partial sums", got, want)
	}
	dp := parallelWorker(t, model, "h200_sxm", 1, 8, 8)
	if dp.allReduce(tokens) != 0 {
		t.Errorf("tp 1: all-reduce %g s, want none", dp.allReduce(tokens))
	}
	// The dp rank sends 7/8 of its token copies; a rank of two GPUs sends
	// 3/4 of its copies, half from each GPU: 3/8 per GPU.
	if got := dp.a2aRemoteShare(); got != 7.0/8 {
		t.Errorf("tp 1 dp 8 ep 8: remote share %g, want 7/8", got)
	}
	mixed := parallelWorker(t, model, "h200_sxm", 2, 4, 8)
	if got := mixed.a2aRemoteShare(); got != 3.0/8 {
		t.Errorf("tp 2 dp 4 ep 8: remote share %g per GPU, want 3/8", got)
	}
	if a2a(mixed) <= 0 || a2a(mixed) >= a2a(dp) {
		t.Errorf("all-to-all of %g tokens: tp 2 dp 4 %g s, want between 0 and tp 1 dp 8's %g s", tokens, a2a(mixed), a2a(dp))
	}
	// One prompt over eight GPUs costs about what a rank's share of eight
	// prompts under attention DP does: the H200 TensorRT-LLM fp8 ep 8 MoE
	// table times 8,192 tokens at 1.39 ms and 16,384 at 2.71 ms, flat per
	// token, and both layouts measured 7.7 s TTFT for DeepSeek-V3 at
	// 8192/1024 and 128 users with one prefill worker.
	perPrompt := dp.moe(tokens, true) / 8
	if one := tp.moe(tokens, true) + tp.allReduceOnce(tokens); one > 1.5*perPrompt {
		t.Errorf("tp 8 ep 8: one prompt's experts and reduce %g s, dp 8 ep 8 %g s a prompt; want within 1.5x", one, perPrompt)
	}
}

// Tensor parallelism past the NVLink domain pays the network for its all-reduces.
func TestMultiNodeTPAllReduce(t *testing.T) {
	const model = "deepseek-ai/DeepSeek-R1"
	in := parallelWorker(t, model, "h200_sxm", 8, 1, 1)
	across := parallelWorker(t, model, "h200_sxm", 16, 1, 1)
	if !across.tpAcrossNodes || in.tpAcrossNodes {
		t.Fatalf("network ring: tp16 %v, tp8 %v", across.tpAcrossNodes, in.tpAcrossNodes)
	}
	// NCCL rings across nodes run at about a NIC's bus bandwidth.
	if a := across.allReduceOnce(4096); a < 5*in.allReduceOnce(4096) {
		t.Errorf("a 4096-token all-reduce over two nodes %g s should be far slower than in one %g s", a, in.allReduceOnce(4096))
	}
}

// A tp that does not divide an MoE model's heads is the engines' attention-DP
// layout: every GPU a DP rank, the experts over all of them. A dense model
// has no such layout and keeps the error.
func TestTPReadAsAttentionDP(t *testing.T) {
	const model = "deepseek-ai/DeepSeek-R1" // 128 heads, 256 experts
	cases := []struct {
		tp, ep         int
		wantDP, wantEP int
	}{
		{36, 0, 36, 36},
		{72, 0, 72, 72},
		{12, 4, 12, 4},  // an ep that divides the GPUs is kept
		{8, 0, 0, 0},    // divides the heads: plain tensor parallelism
		{128, 0, 0, 0},  // still a divisor
		{1024, 0, 0, 0}, // as DP, more ranks than experts: an error
	}
	for _, tc := range cases {
		cfg := Config{Backend: TRTLLM, Weights: catalog.FP4, TP: tc.tp, EP: tc.ep}
		m, _ := catalog.MustDefault().Model(model)
		dev, _ := catalog.MustDefault().Device("gb200", "")
		cfg.Model, cfg.Device = m, dev
		w, err := NewWorker(cfg, MustDefaultParams())
		if tc.wantDP == 0 {
			if err == nil && w.Config().DPFromTP {
				t.Errorf("tp %d: read as attention DP, want tensor parallelism", tc.tp)
			}
			continue
		}
		if err != nil {
			t.Fatalf("tp %d ep %d: %v", tc.tp, tc.ep, err)
		}
		got := w.Config()
		if !got.DPFromTP || got.TP != 1 || got.DP != tc.wantDP || got.EP != tc.wantEP {
			t.Errorf("tp %d ep %d: read as tp %d dp %d ep %d (from tp %v), want tp 1 dp %d ep %d", tc.tp, tc.ep, got.TP, got.DP, got.EP, got.DPFromTP, tc.wantDP, tc.wantEP)
		}
	}
	dense, _ := catalog.MustDefault().Model("Qwen/Qwen3-32B")
	dev, _ := catalog.MustDefault().Device("gb200", "")
	if _, err := NewWorker(Config{Model: dense, Device: dev, TP: 36}, MustDefaultParams()); err == nil {
		t.Error("dense tp 36: want the attention-heads error")
	}
	m, _ := catalog.MustDefault().Model(model)
	for _, tp := range []int{1000, 5000} {
		if _, err := NewWorker(Config{Model: m, Device: dev, TP: tp}, MustDefaultParams()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("tp: %d", tp)) {
			t.Errorf("tp %d: error %v, want one naming tp", tp, err)
		}
	}
}

// Expert-parallel ranks that do not divide the experts (wide EP with
// redundant slots): the busiest rank holds one expert more and sets the
// pace; more ranks than experts is an error.
func TestUnevenExpertParallelism(t *testing.T) {
	const model = "deepseek-ai/DeepSeek-R1"              // 256 experts
	even := parallelWorker(t, model, "gb200", 1, 32, 32) // 8 experts a rank
	odd := parallelWorker(t, model, "gb200", 1, 36, 36)  // 7.1 on average, 8 on the busiest
	if r := odd.expertParams * odd.dp / (even.expertParams * even.dp); r < 8*36/256.0*0.999 || r > 8*36/256.0*1.001 {
		t.Errorf("ep 36 busiest rank holds %.3f of an even split, want %.3f", r, 8*36/256.0)
	}
	if odd.moeCompute(4, false) < even.moeCompute(4, false)*0.999 {
		t.Errorf("ep 36 MoE %g s, ep 32 %g s: the busiest rank holds as many experts", odd.moeCompute(4, false), even.moeCompute(4, false))
	}
	m, _ := catalog.MustDefault().Model(model)
	dev, _ := catalog.MustDefault().Device("gb200", "")
	_, err := NewWorker(Config{Model: m, Device: dev, TP: 1, DP: 512, EP: 512}, MustDefaultParams())
	if err == nil || !strings.Contains(err.Error(), "exceeds the 256 experts") {
		t.Errorf("ep 512 over 256 experts: error %v", err)
	}
}
