package kernels

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

func TestStalls(t *testing.T) {
	ctx := AttnKey{AttnDtype: "bfloat16", KVDtype: "bfloat16"}
	smp := func(op string, k AttnKey, lat float64, key ...float64) Sample {
		return Sample{Op: op, Attn: k, Key: key, Latency: lat}
	}
	for _, tc := range []struct {
		name string
		rows []Sample
		want []bool
	}{
		{"slower than a larger shape by more than the factor", []Sample{
			smp(OpContextMLA, ctx, 1.6, 2, 512, 64), smp(OpContextMLA, ctx, 1.0, 2, 512, 128)}, []bool{true, false}},
		{"within the factor: timing noise, kept", []Sample{
			smp(OpContextMLA, ctx, 1.4, 2, 512, 64), smp(OpContextMLA, ctx, 1.0, 2, 512, 128)}, []bool{false, false}},
		{"the larger shape must be at least as large in every key", []Sample{
			smp(OpContextMLA, ctx, 3, 4, 512, 64), smp(OpContextMLA, ctx, 1, 2, 1024, 128)}, []bool{false, false}},
		{"another table is not compared", []Sample{
			smp(OpContextMLA, ctx, 3, 2, 512, 64), smp(OpContextMLA, AttnKey{AttnDtype: "bfloat16", KVDtype: "fp8"}, 1, 2, 512, 128),
			smp(OpGenerationMLA, AttnKey{KVDtype: "bfloat16"}, 1, 2, 512, 128)}, []bool{false, false, false}},
		{"a repeat of the same shape counts as at least as large", []Sample{
			smp(OpGenerationMLA, ctx, 5, 16, 8, 1024), smp(OpGenerationMLA, ctx, 1, 16, 8, 1024)}, []bool{true, false}},
	} {
		if got := stalls(tc.rows); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: stalls %v, want %v", tc.name, got, tc.want)
		}
	}
	// A table past maxStallRows is not searched (the search is quadratic):
	// a row that is a stall in a small table is kept in a huge one.
	big := []Sample{smp(OpContextMLA, ctx, 1.6, 2, 512, 64)}
	for i := 0; i < maxStallRows; i++ {
		big = append(big, smp(OpContextMLA, ctx, 1.0, 2, 512, 128+float64(i)))
	}
	if stalls(big)[0] {
		t.Error("a table past maxStallRows was searched for stalls")
	}
}

// The MLA tables come back from the cache as they were parsed, stalls
// and all.
func TestCacheHoldsMLATables(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	cache := t.TempDir()
	parsed, err := Load(dir, "h200_sxm", "trtllm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadCached(dir, cache, "h200_sxm", "trtllm"); err != nil {
		t.Fatal(err)
	}
	cached, err := loadCached(dir, cache, "h200_sxm", "trtllm")
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.ContextMLA) == 0 || len(parsed.GenerationMLA) == 0 {
		t.Fatalf("h200_sxm/trtllm: %d context and %d generation MLA tables", len(parsed.ContextMLA), len(parsed.GenerationMLA))
	}
	if !reflect.DeepEqual(leafMap(parsed), leafMap(cached)) || !reflect.DeepEqual(parsed.Stalled, cached.Stalled) {
		t.Fatal("the cached set differs from the parsed one")
	}
	a, okA := parsed.GenerationMLATime("fp8", 16, 64, 3000)
	b, okB := cached.GenerationMLATime("fp8", 16, 64, 3000)
	c, okC := parsed.ContextMLATime(AttnKey{AttnDtype: "bfloat16", KVDtype: "fp8"}, 16, 3000, 2)
	if !okA || !okB || !okC || a != b || !(a > 0) || !(c > 0) {
		t.Errorf("generation MLA %g (%v) parsed, %g (%v) cached; context MLA %g (%v)", a, okA, b, okB, c, okC)
	}
}

// A value that is not a number stops the load with the file and line.
func TestLoadMLANamesTheBadLine(t *testing.T) {
	for _, tc := range []struct{ file, body string }{
		{"context_mla_perf.csv.gz", "mla_dtype,kv_cache_dtype,num_heads,isl,batch_size,latency\nbfloat16,fp8,16,1024,1,0.5\nbfloat16,fp8,x,1024,1,0.5\n"},
		{"generation_mla_perf.csv.gz", "kv_cache_dtype,num_heads,isl,batch_size,step,latency\nfp8,16,1,8,1023,0.05\nfp8,16,1,8,-5000,0.05\n"},
	} {
		dir := t.TempDir()
		writeGz(t, filepath.Join(dir, tc.file), tc.body)
		s := newSet("sys", "be", "v", GPU{MemBW: 1e12, BF16FLOPS: 1e15})
		err := s.loadMLA(dir, func(Sample) bool { return true })
		if err == nil || !strings.Contains(err.Error(), tc.file+" line 3") {
			t.Errorf("%s: error %v, want one naming line 3", tc.file, err)
		}
	}
}

// The MLA and gated delta-net loaders on any table text: an error or
// tables whose answers are positive, never a panic, hang or NaN.
func FuzzLoadMLAAndGDN(f *testing.F) {
	f.Add("mla_dtype,kv_cache_dtype,num_heads,isl,batch_size,latency\nbfloat16,fp8,16,1024,1,0.5\nbfloat16,fp8,16,2048,1,0.9\n",
		"kv_cache_dtype,num_heads,isl,batch_size,step,latency\nfp8,16,1,8,1023,0.05\nfp8,16,1,8,4095,0.2\n",
		gdnHeader+"x,chunk_gated_delta_rule,context,2,1024,2048,4096,4,16,128,32,128,m,0.5\n")
	f.Add("", "kv_cache_dtype,num_heads,isl,batch_size,step,latency\nfp8,1e308,1,8,-1,1e-300\n", gdnHeader+"x,k,generation,NaN,x,1,1,4,16,128,32,128,m,1\n")
	f.Fuzz(func(t *testing.T, ctx, gen, gdn string) {
		dir := t.TempDir()
		for name, body := range map[string]string{"context_mla_perf.csv.gz": ctx, "generation_mla_perf.csv.gz": gen, "gdn_perf.csv.gz": gdn} {
			writeGz(t, filepath.Join(dir, name), body)
		}
		s := newSet("sys", "be", "v", GPU{MemBW: 1e12, BF16FLOPS: 1e15})
		if s.loadMLA(dir, keepAll) != nil || s.loadGDN(dir, keepAll) != nil {
			return
		}
		for k := range s.ContextMLA {
			if v, ok := s.ContextMLATime(k, 16, 3000, 2); ok && !(v > 0) {
				t.Fatalf("context MLA answered %v", v)
			}
		}
		for k := range s.GenerationMLA {
			if v, ok := s.GenerationMLATime(k.KVDtype, 16, 32, 3000); ok && !(v > 0) {
				t.Fatalf("generation MLA answered %v", v)
			}
		}
		for k := range s.GDN {
			if v, ok := s.GDNTime(k, 32, 4, 2048); ok && !(v > 0) {
				t.Fatalf("gdn answered %v", v)
			}
		}
	})
}
