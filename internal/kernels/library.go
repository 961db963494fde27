package kernels

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Library serves a kernel tree's tables to the performance model, loading
// each system and backend once, when first asked for.
type Library struct {
	dir      string
	systemOf map[string]string       // catalog GPU name -> system folder
	measured map[string]*catalog.GPU // catalog GPU name -> the GPU
	// CacheDir keeps parsed tables and fitted MoE summaries between runs
	// ("" for no cache; see cache.go).
	CacheDir string

	mu      sync.Mutex
	sets    map[string]*Set
	errs    map[string]error
	present map[string]bool // system/backend -> the folder exists
}

// Open indexes a kernel tree: resolve maps a system folder's name to the
// catalog GPU it measured (false: not in the catalog, left out).
func Open(dir string, resolve func(system string) (gpu *catalog.GPU, ok bool)) (*Library, error) {
	systems, err := Systems(dir)
	if err != nil {
		return nil, err
	}
	l := &Library{dir: dir, systemOf: map[string]string{}, measured: map[string]*catalog.GPU{},
		sets: map[string]*Set{}, errs: map[string]error{}, present: map[string]bool{}}
	for _, s := range systems {
		if g, ok := resolve(s); ok {
			l.systemOf[g.Name], l.measured[g.Name] = s, g
		}
	}
	if len(l.systemOf) == 0 {
		return nil, fmt.Errorf("--kernels %s: none of its systems %v is a catalog GPU", dir, systems)
	}
	return l, nil
}

// Set returns the tables of a catalog GPU under a backend, or nil when
// that GPU or backend was not measured.
func (l *Library) Set(gpu string, backend perf.Backend) (*Set, error) {
	if !l.has(gpu, backend) {
		return nil, nil
	}
	system := l.systemOf[gpu]
	key := system + "/" + string(backend)
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.sets[key]; ok {
		return s, l.errs[key]
	}
	s, err := loadCached(l.dir, l.CacheDir, system, string(backend))
	l.sets[key], l.errs[key] = s, err
	return s, err
}

// has says whether the tree holds a backend's tables for a catalog GPU,
// looking once (every worker asks).
func (l *Library) has(gpu string, backend perf.Backend) bool {
	system, ok := l.systemOf[gpu]
	if !ok {
		return false
	}
	key := system + "/" + string(backend)
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.present[key]; ok {
		return h
	}
	_, err := os.Stat(filepath.Join(l.dir, system, string(backend)))
	l.present[key] = !errors.Is(err, os.ErrNotExist)
	return l.present[key]
}

// Source is the performance model's view of the library: a GPU's own
// tables, or where it has none those of the nearest measured GPU of its
// architecture and major compute capability (the model scales them). A
// table that exists but cannot be read is an error of the worker that
// needs it.
func (l *Library) Source() perf.KernelSource {
	return func(gpu *catalog.GPU, b perf.Backend) (perf.Kernels, *catalog.GPU, error) {
		on := l.stands(gpu, b)
		if on == nil {
			return nil, nil, nil
		}
		s, err := l.Set(on.Name, b)
		if err != nil || s == nil {
			return nil, nil, err
		}
		return seconds{s}, on, nil
	}
}

// stands picks the measured GPU whose tables price gpu under a backend:
// gpu itself, else the one of its architecture and major compute
// capability (other majors run other kernels) nearest in tensor peaks and
// memory bandwidth, ties to the first name; nil where none is.
func (l *Library) stands(gpu *catalog.GPU, b perf.Backend) *catalog.GPU {
	if l.has(gpu.Name, b) {
		return l.measured[gpu.Name]
	}
	var best *catalog.GPU
	bestD := math.Inf(1)
	names := slices.Sorted(maps.Keys(l.measured))
	for _, n := range names {
		m := l.measured[n]
		if !perf.SameKernels(m, gpu) || !l.has(n, b) {
			continue
		}
		if d := specDistance(gpu, m); d < bestD {
			best, bestD = m, d
		}
	}
	return best
}

// specDistance is how far apart two GPUs' spec sheets are: the summed
// log ratios of the tensor peaks both have and of memory bandwidth.
func specDistance(a, b *catalog.GPU) float64 {
	d := math.Abs(math.Log(a.MemoryBandwidthGBps / b.MemoryBandwidthGBps))
	for _, p := range []catalog.Precision{catalog.BF16, catalog.FP8, catalog.FP4} {
		if x, y := a.TFLOPS[p], b.TFLOPS[p]; x > 0 && y > 0 {
			d += math.Abs(math.Log(x / y))
		}
	}
	return d
}

// seconds adapts a Set (milliseconds) to perf.Kernels (seconds).
type seconds struct{ s *Set }

func (a seconds) GEMM(dtype string, m, n, k float64) (float64, bool) {
	v, ok := a.s.GEMMTime(dtype, m, n, k)
	return v / 1e3, ok
}

func (a seconds) ContextAttention(attnDtype, kvDtype string, headDim, window int, heads, kvHeads, isl, batch float64) (float64, bool) {
	v, ok := a.s.ContextAttentionTime(AttnKey{AttnDtype: attnDtype, KVDtype: kvDtype, HeadDim: headDim, Window: window}, heads, kvHeads, isl, batch)
	return v / 1e3, ok
}

func (a seconds) GenerationAttention(kvDtype string, headDim, window int, heads, kvHeads, batch, kvLen float64) (float64, bool) {
	v, ok := a.s.GenerationAttentionTime(AttnKey{KVDtype: kvDtype, HeadDim: headDim, Window: window}, heads, kvHeads, batch, kvLen)
	return v / 1e3, ok
}

func (a seconds) GenerationMLA(kvDtype string, heads, batch, kvLen float64) (float64, bool) {
	v, ok := a.s.GenerationMLATime(kvDtype, heads, batch, kvLen)
	return v / 1e3, ok
}

func (a seconds) MoE(w catalog.Precision) (*perf.MoEKernel, error) { return a.s.MoEKernel(w) }

func (a seconds) AllReduce(gpus, elems float64) (float64, bool) {
	v, ok := a.s.AllReduceTime(gpus, elems)
	return v / 1e3, ok
}
