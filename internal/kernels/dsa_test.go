package kernels

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

const moduleHeader = "framework,version,device,op_name,kernel_source,model,architecture,mla_dtype,kv_cache_dtype,gemm_type,num_heads,batch_size,isl,tp_size,step,latency\n"

// moduleRow is one attention-block row: model, heads, batch, cached
// length (isl 1 plus step) and ms.
func moduleRow(model string, heads, batch, seq int, ms float64) string {
	return fmt.Sprintf("X,1,GPU,m,default,%s,A,bfloat16,fp8,fp8_block,%d,%d,1,1,%d,%g\n", model, heads, batch, seq-1, ms)
}

// writeModules writes a system's block tables under backend (mla "" for none).
func writeModules(t *testing.T, dir, system, backend, dsa, mla string) {
	t.Helper()
	v := filepath.Join(dir, system, backend, "1.0")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	writeGz(t, filepath.Join(v, "dsa_generation_module_perf.csv.gz"), moduleHeader+dsa)
	if mla != "" {
		writeGz(t, filepath.Join(v, "mla_generation_module_perf.csv.gz"), moduleHeader+mla)
	}
}

// The indexer cost is the DSA block over the MLA block of the same key,
// taken where the batch is small and the context short; a repeated row
// counts at its fastest, and a backend with the DSA table alone takes the
// family's share of its own block.
func TestIndexerFromBlockTables(t *testing.T) {
	dir := t.TempDir()
	var dsa, mla string
	for _, b := range []int{1, 4, 16} {
		for _, s := range []int{128, 1024} {
			dsa += moduleRow("zai-org/GLM-5", 16, b, s, 0.100)
			mla += moduleRow(indexerBaseModel, 16, b, s, 0.060)
		}
	}
	// Outside the region (a batch of 64, a context of 8k), and slower
	// repeats of most keys: none of them may count.
	dsa += moduleRow("zai-org/GLM-5", 16, 64, 1024, 5) + moduleRow("zai-org/GLM-5", 16, 4, 8192, 5)
	for _, b := range []int{1, 4} {
		for _, s := range []int{128, 1024} {
			dsa += moduleRow("zai-org/GLM-5", 16, b, s, 9)
		}
	}
	writeModules(t, dir, "a", "trtllm", dsa, mla)
	writeModules(t, dir, "b", "trtllm", strings.ReplaceAll(dsa, ",0.1\n", ",0.11\n"), mla)
	writeModules(t, dir, "a", "sglang", strings.ReplaceAll(dsa, ",0.1\n", ",0.2\n"), "")

	var samples []IndexerSample
	for _, sb := range [][2]string{{"a", "trtllm"}, {"b", "trtllm"}, {"a", "sglang"}} {
		smp, err := ReadIndexer(dir, sb[0], sb[1])
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, smp)
	}
	a := samples[0]
	if a.Rows != 6 || a.Matched != 6 || math.Abs(a.IncrementUs-40) > 1e-9 || math.Abs(a.BlockUs-100) > 1e-9 {
		t.Errorf("system a: %+v, want 6 rows matched, block 100 us, increment 40 us", a)
	}
	if s := samples[2]; s.Matched != 0 || s.IncrementUs != 0 || math.Abs(s.BlockUs-200) > 1e-9 {
		t.Errorf("sglang without an MLA table: %+v, want the block (200 us) and no increment", s)
	}
	res := FitIndexer(samples, func(string) string { return "fam" })
	if len(res) != 2 {
		t.Fatalf("%d results, want sglang and trtllm: %+v", len(res), res)
	}
	sg, tr := res[0], res[1]
	// trtllm: increments of 40 and 50 us, median 45; each held out
	// predicts the other (25% and 20% off).
	if !tr.Measured || math.Abs(tr.Us-45) > 1e-9 || tr.HeldOut.N != 2 || math.Abs(tr.HeldOut.MAPEPct-22.5) > 1e-9 {
		t.Errorf("trtllm: %+v, want 45 us measured, held out 22.5%% over 2", tr)
	}
	// sglang: the shares are 0.40 and 50/110; their median times its block.
	share := (0.4 + 50.0/110) / 2
	if sg.Measured || math.Abs(sg.Share-share) > 1e-9 || math.Abs(sg.Us-share*200) > 1e-9 {
		t.Errorf("sglang: %+v, want share %.3f of its 200 us block", sg, share)
	}
}

// A table the reader cannot trust is an error naming the file and line;
// a backend without the DSA table is no sample and no error.
func TestIndexerBadTables(t *testing.T) {
	dir := t.TempDir()
	writeModules(t, dir, "a", "vllm", moduleRow("zai-org/GLM-5", 16, 0, 1024, 0.1), "")
	if _, err := ReadIndexer(dir, "a", "vllm"); err == nil || !strings.Contains(err.Error(), "dsa_generation_module_perf.csv.gz line 2") || !strings.Contains(err.Error(), "batch 0") {
		t.Errorf("a batch of 0: %v, want an error naming the file, line 2 and the batch", err)
	}
	writeModules(t, dir, "c", "vllm", moduleRow("zai-org/GLM-5", 16, 4, 1024, 0.1)+moduleRow("zai-org/GLM-5", 16, 8, 1024, 1e306), "")
	if _, err := ReadIndexer(dir, "c", "vllm"); err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "no measurement") {
		t.Errorf("a block of 1e306 ms: %v, want an error naming line 3", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "b", "vllm", "1.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if smp, err := ReadIndexer(dir, "b", "vllm"); err != nil || smp.Rows != 0 {
		t.Errorf("no DSA table: %+v, %v; want an empty sample", smp, err)
	}
	if res := FitIndexer([]IndexerSample{{System: "b", Backend: "vllm"}}, func(string) string { return "f" }); len(res) != 0 {
		t.Errorf("empty samples fitted %+v", res)
	}
}

// On the shared tables: the indexer costs something on every Blackwell
// and Hopper backend that measured the DSA block, and a system's measured
// cost is predicted by the family's other systems within 15%.
func TestIndexerOnTheTables(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	fam := map[string]string{"b200_sxm": "blackwell", "b300_sxm": "blackwell", "gb200": "blackwell", "h100_sxm": "hopper", "h200_sxm": "hopper"}
	var samples []IndexerSample
	for s := range fam {
		for _, b := range []string{"trtllm", "vllm", "sglang"} {
			smp, err := ReadIndexer(dir, s, b)
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, smp)
		}
	}
	res := FitIndexer(samples, func(s string) string { return fam[s] })
	if len(res) != 6 {
		t.Fatalf("%d results, want 3 backends on 2 families: %+v", len(res), res)
	}
	for _, r := range res {
		if !(r.Us >= 20 && r.Us <= 300) {
			t.Errorf("%s/%s: %.1f us a layer, want 20-300 (the tables' blocks are 100-300 us)", r.Family, r.Backend, r.Us)
		}
		if r.Measured && (r.HeldOut.N < 2 || r.HeldOut.MAPEPct > 15) {
			t.Errorf("%s/%s: held out by system %+v, want two or more systems within 15%%", r.Family, r.Backend, r.HeldOut)
		}
	}
}

// The block-table reader on any table text: an error, or a sample whose
// numbers are finite and not negative, never a panic or a hang.
func FuzzReadIndexer(f *testing.F) {
	f.Add(moduleHeader+moduleRow("zai-org/GLM-5", 16, 4, 1024, 0.1), moduleHeader+moduleRow(indexerBaseModel, 16, 4, 1024, 0.06))
	f.Add(moduleHeader+"X,1,G,m,d,zai-org/GLM-5,A,b,fp8,fp8_block,NaN,4,1,1,-1e308,1e-300\n", "model,latency\nx,1\n")
	f.Add(moduleHeader+moduleRow("zai-org/GLM-5", 16, 4, 1024, 0.01), moduleHeader+moduleRow(indexerBaseModel, 16, 4, 1024, 5))
	f.Add(moduleHeader+moduleRow("zai-org/GLM-5", 16, 4, 1024, 1e306), moduleHeader+moduleRow(indexerBaseModel, 16, 4, 1024, 1e-306))
	f.Fuzz(func(t *testing.T, dsa, mla string) {
		dir := t.TempDir()
		v := filepath.Join(dir, "s", "b", "1")
		if err := os.MkdirAll(v, 0o755); err != nil {
			t.Fatal(err)
		}
		writeGz(t, filepath.Join(v, "dsa_generation_module_perf.csv.gz"), dsa)
		writeGz(t, filepath.Join(v, "mla_generation_module_perf.csv.gz"), mla)
		writeGz(t, filepath.Join(v, "dsa_context_module_perf.csv.gz"), dsa)
		writeGz(t, filepath.Join(v, "mla_context_module_perf.csv.gz"), mla)
		if rows, err := ReadPrefillExcess(dir, "s", []string{"b"}); err == nil {
			for _, r := range rows {
				if math.IsNaN(r.Ms) || math.IsInf(r.Ms, 0) || r.Ms < 0 {
					t.Fatalf("prefill excess %+v", r)
				}
			}
			_, _ = FitSparsePrefillFamilies(rows, func(string) string { return "f" })
		}
		smp, err := ReadIndexer(dir, "s", "b")
		if err != nil {
			return
		}
		for _, x := range []float64{smp.BlockUs, smp.IncrementUs} {
			if smp.Rows > 0 && (math.IsNaN(x) || math.IsInf(x, 0) || x < 0) {
				t.Fatalf("sample %+v", smp)
			}
		}
		if smp.Matched > smp.Rows {
			t.Fatalf("matched %d of %d rows", smp.Matched, smp.Rows)
		}
		FitIndexer([]IndexerSample{smp, {System: "t", Backend: "b", Rows: 1, BlockUs: 1}}, func(string) string { return "f" })
	})
}

// ctxRow is one prefill attention-block row: model, heads, batch, isl, ms.
func ctxRow(model string, heads, batch, isl int, ms float64) string {
	return fmt.Sprintf("X,1,GPU,m,default,%s,A,bfloat16,bfloat16,fp8_block,%d,%d,%d,1,0,%g\n", model, heads, batch, isl, ms)
}

// The prompt-side excess: DSA block less MLA block per prompt shape, the
// backend's own MLA block or, without one, the fastest other backend's on
// the same system; the fit recovers a known cost, and each system is held
// out.
func TestPrefillExcessAndFit(t *testing.T) {
	truth := SparsePrefill{CallUs: 30, TokenUs: 0.2, PairPs: 50}
	dir := t.TempDir()
	for _, sys := range []string{"a", "b"} {
		var dsa, mla, slow string
		for _, b := range []int{1, 2, 4} {
			for _, n := range []int{512, 1024, 2048, 4096, 8192} {
				base := 0.0001 * float64(b*n)
				ex := truth.Ms(PrefillExcess{Batch: float64(b), ISL: float64(n)})
				dsa += ctxRow("zai-org/GLM-5", 16, b, n, base+ex)
				mla += ctxRow(indexerBaseModel, 16, b, n, base)
				slow += ctxRow(indexerBaseModel, 16, b, n, 2*base)
			}
		}
		// Out of the region: 64 heads, a 128-token prompt.
		dsa += ctxRow("zai-org/GLM-5", 64, 1, 1024, 9) + ctxRow("zai-org/GLM-5", 16, 1, 128, 9)
		for _, be := range []struct{ name, dsa, mla string }{{"trtllm", dsa, mla}, {"vllm", "", slow}, {"sglang", dsa, ""}} {
			v := filepath.Join(dir, sys, be.name, "1")
			if err := os.MkdirAll(v, 0o755); err != nil {
				t.Fatal(err)
			}
			if be.dsa != "" {
				writeGz(t, filepath.Join(v, "dsa_context_module_perf.csv.gz"), moduleHeader+be.dsa)
			}
			if be.mla != "" {
				writeGz(t, filepath.Join(v, "mla_context_module_perf.csv.gz"), moduleHeader+be.mla)
			}
		}
	}
	var rows []PrefillExcess
	for _, sys := range []string{"a", "b"} {
		r, err := ReadPrefillExcess(dir, sys, []string{"trtllm", "vllm", "sglang"})
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	if len(rows) != 60 {
		t.Fatalf("%d rows, want 15 shapes x 2 systems x (trtllm, sglang)", len(rows))
	}
	for _, r := range rows {
		want := truth.Ms(r)
		if math.Abs(r.Ms/want-1) > 1e-9 || r.Borrowed != (r.Backend == "sglang") {
			t.Fatalf("%+v: excess %.4f ms, want %.4f over the fastest MLA block (borrowed for sglang only)", r, r.Ms, want)
		}
	}
	res, err := FitSparsePrefillFamilies(rows, func(string) string { return "fam" })
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results, want sglang and trtllm", len(res))
	}
	for _, r := range res {
		c := r.Cost
		if math.Abs(c.CallUs/truth.CallUs-1) > 0.05 || math.Abs(c.TokenUs/truth.TokenUs-1) > 0.05 || math.Abs(c.PairPs/truth.PairPs-1) > 0.05 {
			t.Errorf("%s: fitted %+v, want %+v", r.Backend, c, truth)
		}
		if r.HeldOut.N != 30 || r.HeldOut.MAPEPct > 2 || len(r.BySystem) != 2 {
			t.Errorf("%s: held out %+v by %v, want both systems within 2%%", r.Backend, r.HeldOut, r.BySystem)
		}
	}
	if res, err := FitSparsePrefillFamilies(rows[:10], func(string) string { return "fam" }); err != nil || len(res) != 0 {
		t.Errorf("10 rows: %+v, %v; want no cost (fewer than %d rows)", res, err, MinPrefillRows)
	}
}
