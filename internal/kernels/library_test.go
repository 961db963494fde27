package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// fakeTree lays out system folders with the given backends (no tables).
func fakeTree(t *testing.T, systems map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	for s, backends := range systems {
		if err := os.MkdirAll(filepath.Join(dir, s), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s, "system.yaml"), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, b := range backends {
			if err := os.MkdirAll(filepath.Join(dir, s, b), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// A GPU without tables borrows those of the nearest measured GPU of its
// architecture and major compute capability that has the backend, and
// none where no such GPU was measured.
func TestLibraryStandsIn(t *testing.T) {
	cat := catalog.MustDefault()
	all := []string{"trtllm", "vllm", "sglang"}
	dir := fakeTree(t, map[string][]string{
		"a100_sxm": all, "l40s": all, "h100_sxm": all, "h200_sxm": all,
		"b200_sxm": all, "b300_sxm": {"trtllm"}, "gb200": all,
	})
	lib, err := Open(dir, func(system string) (*catalog.GPU, bool) {
		g, err := cat.GPU(system)
		return g, err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gpu     string
		backend perf.Backend
		want    string // "" for none
	}{
		{"h100_sxm", perf.VLLM, "h100_sxm"}, // its own
		{"h100_nvl", perf.VLLM, "h100_sxm"}, // nearer than h200 in peaks and bandwidth
		{"gh200", perf.TRTLLM, "h100_sxm"},
		{"l4", perf.SGLang, "l40s"},
		{"a10", perf.VLLM, "a100_80gb"},        // Ampere 8.6 runs the 8.x kernels of the A100
		{"gb300", perf.TRTLLM, "b300_sxm"},     // the B300's fp4 peak
		{"gb300", perf.VLLM, "gb200"},          // b300 has no vllm tables here
		{"rtx_pro_6000", perf.TRTLLM, ""},      // compute capability 12: other kernels
		{"b200_sxm", perf.Backend("none"), ""}, // no such backend anywhere
	} {
		g, err := cat.GPU(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		got := lib.stands(g, tc.backend)
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tc.want {
			t.Errorf("%s under %s: tables of %q, want %q", tc.gpu, tc.backend, name, tc.want)
		}
	}
}

// A backend folder must hold one version folder; an empty one or two are
// refused, naming the folder.
func TestLibraryVersionFolders(t *testing.T) {
	cat := catalog.MustDefault()
	dir := fakeTree(t, map[string][]string{"h100_sxm": {"vllm", "sglang"}})
	for _, v := range []string{"0.5.10", "0.5.12"} {
		if err := os.MkdirAll(filepath.Join(dir, "h100_sxm", "sglang", v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lib, err := Open(dir, func(system string) (*catalog.GPU, bool) {
		g, err := cat.GPU(system)
		return g, err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lib.CacheDir = ""
	for be, want := range map[perf.Backend]string{
		perf.VLLM:   "vllm holds no version folder",
		perf.SGLang: "holds versions [0.5.10 0.5.12]; want exactly one",
	} {
		if _, err := lib.Set("h100_sxm", be); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", be, err, want)
		}
	}
}

// Workers are built concurrently (calibrate predicts in parallel), and
// each asks the library for its tables.
func TestLibraryConcurrentLookups(t *testing.T) {
	cat := catalog.MustDefault()
	dir := fakeTree(t, map[string][]string{"h100_sxm": {"vllm"}, "l40s": {"sglang"}})
	lib, err := Open(dir, func(system string) (*catalog.GPU, bool) {
		g, err := cat.GPU(system)
		return g, err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	src := lib.Source()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, name := range []string{"h100_nvl", "l4", "a10", "rtx_pro_6000"} {
				g, err := cat.GPU(name)
				if err != nil {
					t.Error(err)
					return
				}
				be := []perf.Backend{perf.VLLM, perf.SGLang}[i%2]
				// No version folders: a GPU that borrows gets the loader's
				// error, one that borrows nothing gets nothing.
				borrows := (name == "h100_nvl" && be == perf.VLLM) || (name == "l4" && be == perf.SGLang)
				k, _, err := src(g, be)
				if k != nil || (err != nil) != borrows {
					t.Errorf("%s under %s: tables %v, error %v; want an error %v", name, be, k, err, borrows)
				}
			}
		}()
	}
	wg.Wait()
}
