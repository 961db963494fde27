package kernels

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// leafMap lists a set's measurements by table and key, for comparison.
func leafMap(s *Set) map[string][]float64 {
	out := map[string][]float64{}
	for _, cg := range s.snapshot().Grids {
		name := fmt.Sprintf("%s/%s/%+v", cg.Op, cg.Dtype, cg.Attn)
		if _, dup := out[name]; dup {
			panic("two tables named " + name)
		}
		out[name] = append(out[name], cg.Keys...)
		out[name] = append(out[name], cg.Values...)
	}
	return out
}

// A set read back from the cache is the set parsed from the tables: every
// measurement, the dropped counts and the MoE summaries. A second run reads
// the cache, not the tables.
func TestCacheHoldsTheParsedTables(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	cache := t.TempDir()
	parsed, err := Load(dir, "h200_sxm", "vllm")
	if err != nil {
		t.Fatal(err)
	}
	first, err := loadCached(dir, cache, "h200_sxm", "vllm")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.set.gob"))
	if len(files) != 1 {
		t.Fatalf("cache files after the first load: %v", files)
	}
	second, err := loadCached(dir, cache, "h200_sxm", "vllm")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(leafMap(parsed), leafMap(second)) || !reflect.DeepEqual(parsed.Dropped, second.Dropped) {
		t.Fatal("the cached set differs from the parsed one")
	}
	for _, s := range []*Set{first, second} {
		if got, want := s.GEMM["fp8"].Rows(), parsed.GEMM["fp8"].Rows(); got != want {
			t.Errorf("fp8 GEMM rows %d, parsed %d", got, want)
		}
	}
	for _, q := range [][3]float64{{37, 10240, 5120}, {1, 128, 4096}, {9000, 7168, 2048}} {
		a, _ := parsed.GEMMTime("fp8", q[0], q[1], q[2])
		b, _ := second.GEMMTime("fp8", q[0], q[1], q[2])
		if a != b {
			t.Errorf("GEMM %v: %g parsed, %g cached", q, a, b)
		}
	}
	// The MoE summary: fitted once, then read back.
	k1, err := first.MoEKernel(catalog.FP8)
	if err != nil || k1 == nil {
		t.Fatalf("moe summary: %v", err)
	}
	third, _ := loadCached(dir, cache, "h200_sxm", "vllm")
	k3, err := third.MoEKernel(catalog.FP8)
	if err != nil || k3 == nil || *k1 != *k3 {
		t.Errorf("cached moe summary %+v, fitted %+v (%v)", k3, k1, err)
	}
	// DeepSeek-V3's experts (7168 x 2048, gated, fp8) at 64 tokens.
	a, okA := first.MoETime(catalog.FP8, 256, 8, 3*7168*2048, 64)
	b, okB := third.MoETime(catalog.FP8, 256, 8, 3*7168*2048, 64)
	if !okA || okA != okB || a != b {
		t.Errorf("moe table: %g (%v) fitted, %g (%v) cached", a, okA, b, okB)
	}
}

// A damaged cache file is not an error: the tables are parsed again and the
// file rewritten. A table that changes changes the cache's name.
func TestCacheSurvivesDamageAndFollowsTheTables(t *testing.T) {
	src := sharedtest.Path(t, "reference", "kernels")
	// A private copy of one system, so its files can be touched.
	dir := t.TempDir()
	for _, rel := range []string{"l40s/system.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vdir, version, err := onlyVersion(filepath.Join(src, "l40s", "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "l40s", "vllm", version)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"gemm_perf.csv.gz"} {
		b, err := os.ReadFile(filepath.Join(vdir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := t.TempDir()
	want, err := Load(dir, "l40s", "vllm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadCached(dir, cache, "l40s", "vllm"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.set.gob"))
	if len(files) != 1 {
		t.Fatalf("cache files: %v", files)
	}
	if err := os.WriteFile(files[0], []byte("not a gob"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := loadCached(dir, cache, "l40s", "vllm")
	if err != nil || !reflect.DeepEqual(leafMap(got), leafMap(want)) {
		t.Fatalf("after damage: %v, same tables %v", err, err == nil && reflect.DeepEqual(leafMap(got), leafMap(want)))
	}
	var c cachedSet
	if err := readGob(files[0], &c); err != nil {
		t.Errorf("damaged cache file not rewritten: %v", err)
	}
	k1, _ := cacheKey(dir, "l40s", "vllm")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dst, "gemm_perf.csv.gz"), later, later); err != nil {
		t.Fatal(err)
	}
	if k2, _ := cacheKey(dir, "l40s", "vllm"); k1 == k2 {
		t.Error("a changed table kept the cache's name")
	}
}

// A cache file is read back from disk: whatever bytes it holds, restoring
// it is an error or a set, never a panic.
func FuzzCacheRestore(f *testing.F) {
	var seed bytes.Buffer
	g := NewGrid(3)
	g.Add([]float64{1, 2, 3}, 0.5)
	c := cachedSet{Format: cacheFormat, System: "x", Backend: "vllm", Dropped: map[string]int{OpGEMM: 1},
		Grids: []cachedGrid{flatten(OpGEMM, "fp8", AttnKey{}, g)}}
	if err := gob.NewEncoder(&seed).Encode(c); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Add([]byte("not a gob"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		var c cachedSet
		if gob.NewDecoder(bytes.NewReader(b)).Decode(&c) != nil {
			return
		}
		if s, err := restore(c, "."); err == nil {
			for _, g := range s.GEMM {
				g.Lookup([]float64{1, 2, 3})
			}
		}
	})
}
