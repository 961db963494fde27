package calibrate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The calibration CSV readers take any file: an error, never a panic or a
// row that is not a measurement.
func FuzzLoadCSV(f *testing.F) {
	head := "id,silicon_data_source,backend,model_path,system,precision,mode,isl,osl,batch_size,tp_size,pp_size,attention_dp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
	f.Add(head + "a,source_file=x.csv; silicon_concurrency=8,vllm,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1000,100,8,1,1,,,120.5,9.5\n")
	f.Add(head + "b,x,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,fp4,agg,1024,1024,4,1,1,8,8,300,20\n")
	f.Add(head + "c,x,vllm,m,g,,disagg,1,1,,,,,,1,1\n")
	f.Add("id\n\"unterminated\n")
	f.Add(head + "d,x,vllm,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1e300,-5,NaN,0,1,1,1,-1,Inf\n")
	moeTP := "id,silicon_data_source,backend,model_path,system,mode,isl,osl,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
	f.Add(moeTP + "e_tp8_ep8,silicon_concurrency=64,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,1024,1024,1,1,1,64,8,8,1085,12.3\n")
	f.Add(moeTP + "f,silicon_concurrency=320,trtllm,deepseek-ai/DeepSeek-R1,b200_sxm,agg,4000,1000,40,8,1,1,8,1,350,17\n")
	resolve := func(string) (bool, bool) { return true, true }
	f.Fuzz(func(t *testing.T, data string) {
		path := filepath.Join(t.TempDir(), "runs.csv")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		users := map[string][]int{} // ids need not be unique
		if cases, _, err := LoadSilicon(path, resolve); err == nil {
			for _, c := range cases {
				if c.TTFTms <= 0 || c.TPOTms <= 0 || c.Query.Concurrency < 1 {
					t.Fatalf("case %+v is not a measurement", c)
				}
				if c.Mode == "agg" {
					users[c.ID] = append(users[c.ID], c.Query.Concurrency)
				}
			}
		}
		if rows, err := LoadGridRows(path); err == nil {
			for _, r := range rows {
				if r.TTFTms <= 0 || r.TPOTms <= 0 || r.Concurrency < 1 || r.OSL < 1 {
					t.Fatalf("grid row %+v is not a measurement", r)
				}
				// One reading of a row's layout serves both (readAggLayout).
				if n, ok := users[r.ID]; ok && !slices.Contains(n, r.Concurrency) {
					t.Fatalf("row %q: %d users in the grid, %v in the loader", r.ID, r.Concurrency, n)
				}
			}
		}
		_, _, _ = LoadMaxThroughput(path, resolve, func(string) bool { return true })
	})
}

// FuzzParseKnobs: any --knobs value is a list of known groups or an error
// naming them; never a panic, never an empty fit.
func FuzzParseKnobs(f *testing.F) {
	for _, s := range []string{"", "serving", "gemm,attention,serving", "attention, serving", ",", "gemm,,x", "serving,serving"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ks, err := ParseKnobs(s)
		if err != nil {
			if !strings.Contains(err.Error(), "gemm, attention, serving") {
				t.Fatalf("%q: error does not list the groups: %v", s, err)
			}
			return
		}
		if len(ks) == 0 || len(ks) > len(Knobs()) {
			t.Fatalf("%q: %d knobs", s, len(ks))
		}
	})
}
