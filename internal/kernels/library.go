package kernels

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Library serves a kernel tree's tables to the performance model, loading
// each system and backend once, when first asked for.
type Library struct {
	dir      string
	systemOf map[string]string // catalog GPU name -> system folder
	// CacheDir keeps parsed tables and fitted MoE summaries between runs
	// ("" for no cache; see cache.go).
	CacheDir string

	mu   sync.Mutex
	sets map[string]*Set
	errs map[string]error
}

// Open indexes a kernel tree: resolve maps a system folder's name to the
// catalog GPU it measured (false: not in the catalog, left out).
func Open(dir string, resolve func(system string) (gpu string, ok bool)) (*Library, error) {
	systems, err := Systems(dir)
	if err != nil {
		return nil, err
	}
	l := &Library{dir: dir, systemOf: map[string]string{}, sets: map[string]*Set{}, errs: map[string]error{}}
	for _, s := range systems {
		if g, ok := resolve(s); ok {
			l.systemOf[g] = s
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
	system, ok := l.systemOf[gpu]
	if !ok {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(l.dir, system, string(backend))); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
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

// Source is the performance model's view of the library: a table that
// exists but cannot be read is an error of the worker that needs it.
func (l *Library) Source() perf.KernelSource {
	return func(gpu string, b perf.Backend) (perf.Kernels, error) {
		s, err := l.Set(gpu, b)
		if err != nil || s == nil {
			return nil, err
		}
		return seconds{s}, nil
	}
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
