package calibrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// An aggregated row's layout: batch_size is per attention-DP rank; a row
// exported with tp or dp = moe_tp x moe_ep reads as the run of moe_ep GPUs
// it repeats; a row whose users contradict its stated concurrency is left
// out with the reason, in LoadSilicon and the decision grids alike.
func TestAggLayout(t *testing.T) {
	head := "id,silicon_data_source,backend,model_path,system,mode,isl,osl,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
	rows := []struct {
		row           string
		tp, dp, ep, c int
		skipped       bool
	}{
		{"tp8,silicon_concurrency=16,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,16,8,1,1,8,1,200,10", 8, 0, 0, 16, false},
		{"dep8,silicon_concurrency=64,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,8,1,1,8,1,8,200,10", 1, 8, 8, 64, false},
		{"dep8-as-64,silicon_concurrency=64,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,1,1,1,64,8,8,200,10", 1, 8, 8, 64, false},
		{"dep4-as-16,silicon_concurrency=256,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,16,1,1,16,4,4,200,10", 1, 4, 4, 256, false},
		// TensorRT-LLM's attention-DP TP-only experts: moe_ep 1, as written.
		{"dtp8,silicon_concurrency=64,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,8,1,1,8,8,1,200,10", 1, 8, 0, 64, false},
		// tp recorded as moe_tp x moe_ep reads as the run of moe_ep GPUs.
		{"tp8-as-64,silicon_concurrency=16,sglang,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,16,64,1,1,8,8,200,10", 8, 0, 8, 16, false},
		{"tp4-as-16,silicon_concurrency=32,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,agg,1024,1024,32,16,1,1,4,4,200,10", 4, 0, 4, 32, false},
		// A layout whose experts span its GPUs otherwise stays as written.
		{"tp16-ep4,silicon_concurrency=32,trtllm,deepseek-ai/DeepSeek-R1,gb200,agg,1024,1024,32,16,1,1,1,4,200,10", 16, 0, 4, 32, false},
		// Within one node the product can be a real layout: tp 4, moe 2 x 2.
		{"tp4-moe2x2,silicon_concurrency=16,trtllm,Qwen/Qwen3-235B-A22B-FP8,h100_sxm,agg,1024,1024,16,4,1,1,2,2,200,10", 4, 0, 2, 16, false},
		{"vl,silicon_concurrency=64,vllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,32,2,1,2,1,4,200,10", 2, 2, 4, 64, false},
		// The id's _c<N> stands in for a source that does not say.
		{"x_c32_tp8,,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,32,8,1,1,8,1,200,10", 8, 0, 0, 32, false},
		{"self-contradicting,silicon_concurrency=320,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,40,8,1,1,8,1,200,10", 0, 0, 0, 0, true},
	}
	body := head
	for _, r := range rows {
		body += r.row + "\n"
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "silicon_calibration.csv")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadDir(dir, catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	grid, err := ds.GridRows()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Case{}
	for _, c := range ds.Cases {
		byID[c.ID] = c
	}
	gridByID := map[string]GridRow{}
	for _, g := range grid {
		gridByID[g.ID] = g
	}
	skipped := map[string]string{}
	for _, s := range ds.Skipped {
		skipped[s.ID] = s.Reason
	}
	for i, r := range rows {
		id, _, _ := strings.Cut(r.row, ",")
		c, ok := byID[id]
		g, inGrid := gridByID[id]
		if r.skipped {
			if ok || inGrid || skipped[id] == "" {
				t.Errorf("row %d (%s): want it left out with a reason, got case %v grid %v reason %q", i, id, ok, inGrid, skipped[id])
			}
			continue
		}
		if !ok || !inGrid {
			t.Errorf("row %d (%s): not loaded (skipped: %q)", i, id, skipped[id])
			continue
		}
		q := c.Query
		if q.TP != r.tp || q.DP != r.dp || q.EP != r.ep || q.Concurrency != r.c {
			t.Errorf("row %d (%s): tp %d dp %d ep %d users %d, want %d %d %d %d", i, id, q.TP, q.DP, q.EP, q.Concurrency, r.tp, r.dp, r.ep, r.c)
		}
		if g.Concurrency != r.c || g.GPUs() != max(r.tp, 1)*max(r.dp, 1) {
			t.Errorf("row %d (%s): grid users %d on %d GPUs, want %d on %d", i, id, g.Concurrency, g.GPUs(), r.c, max(r.tp, 1)*max(r.dp, 1))
		}
	}
}
