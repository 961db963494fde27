package perf

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// A checkpoint of MXFP4 experts is priced by the MXFP4 summary where its
// architecture has one (vLLM on Blackwell by TensorRT-LLM's), else by the
// fp4 one; NVFP4 experts keep the fp4 summary.
func TestWorkerPricesMXFP4Experts(t *testing.T) {
	c := catalog.MustDefault()
	p := MustDefaultParams()
	bw := p.Families[catalog.Blackwell].MoE
	if bw[TRTLLM][MXFP4] == nil || bw[TRTLLM][catalog.FP4] == nil || bw[SGLang][MXFP4] != nil {
		t.Fatal("want embedded Blackwell TensorRT-LLM mxfp4 and fp4 summaries and no SGLang mxfp4 one")
	}
	gptOSS, err := c.Model("openai/gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	r1, err := c.Model("deepseek-ai/DeepSeek-R1")
	if err != nil {
		t.Fatal(err)
	}
	b200, err := c.Device("b200_sxm", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name string
		m    *catalog.Model
		be   Backend
		want *MoEKernel
	}{
		{"gpt-oss on TensorRT-LLM", gptOSS, TRTLLM, bw[TRTLLM][MXFP4]},
		{"gpt-oss on vLLM", gptOSS, VLLM, bw[TRTLLM][MXFP4]},
		{"gpt-oss on SGLang (no mxfp4 summary)", gptOSS, SGLang, p.MoEKernelFor(b200.GPU, SGLang, catalog.FP4)},
		{"DeepSeek-R1 at fp4 (NVFP4)", r1, TRTLLM, bw[TRTLLM][catalog.FP4]},
	} {
		w, err := NewWorker(Config{Model: x.m, Device: b200, Backend: x.be, Weights: catalog.FP4, TP: 4, EP: 4}, p)
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		if w.moeKernel != x.want || x.want == nil {
			t.Errorf("%s: summary %+v, want %+v", x.name, w.moeKernel, x.want)
		}
	}
	if MoEKey(catalog.FP4, true) != MXFP4 || MoEKey(catalog.FP4, false) != catalog.FP4 || MoEKey(catalog.FP8, true) != catalog.FP8 {
		t.Error("MoEKey: want mxfp4 only for fp4 weights in MXFP4")
	}
}
