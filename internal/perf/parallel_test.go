package perf

import (
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
