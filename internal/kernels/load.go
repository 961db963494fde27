package kernels

import (
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// AttnKey selects one attention table: compute and KV-cache dtypes, head
// size and sliding window (0: full attention). Generation attention has no
// compute dtype of its own (AttnDtype is "").
type AttnKey struct {
	AttnDtype, KVDtype string
	HeadDim, Window    int
}

// Set is one system's measured kernels under one backend.
type Set struct {
	System, Backend, Version string
	GPU                      GPU
	// GEMM by gemm_dtype over (m, n, k).
	GEMM map[string]*Grid
	// ContextAttention over (num_heads, kv_heads, isl, batch).
	ContextAttention map[AttnKey]*Grid
	// GenerationAttention over (num_heads, kv_heads, batch, kv_len).
	GenerationAttention map[AttnKey]*Grid
	// ContextMLA over (num_heads, isl, batch) and GenerationMLA over
	// (num_heads, batch, kv_len), by mla and KV-cache dtype (mla.go).
	ContextMLA, GenerationMLA map[AttnKey]*Grid
	// GDN over (value heads, batch, seq_len) by "kernel/phase" (gdn.go).
	GDN map[string]*Grid
	// AllReduce over (num_gpus, elements): the backend's own CUDA-graph
	// all-reduce where measured, else NCCL's, 16-bit elements.
	AllReduce *Grid
	// Dropped counts rows per op kind faster than the GPU's roofline allows
	// (a collector artefact, e.g. a kernel that did not run): kept out.
	Dropped map[string]int
	// Stalled counts rows per op kind far slower than a larger shape of
	// the same table (stalls; see stallFactor): kept out.
	Stalled map[string]int
	// Skipped counts rows per reason the tables' keys cannot hold them.
	Skipped map[string]int

	dir      string // the kernel tree, for the MoE table read on first use
	moeCache string // where the fitted MoE summaries are kept ("" for nowhere)
	moeOnce  sync.Once
	moe      map[catalog.Precision]*perf.MoEKernel
	moeGrid  map[catalog.Precision]*Grid
	moeErr   error
}

// MoEKernel is the summary fitted to this set's fused-MoE table at a weight
// precision, or nil where it has too few rows. The table is read and
// fitted on first use (about a second), since most models have no experts.
func (s *Set) MoEKernel(w catalog.Precision) (*perf.MoEKernel, error) {
	s.moeOnce.Do(func() {
		var c cachedMoE
		if s.moeCache != "" && readGob(s.moeCache, &c) == nil && c.Format == cacheFormat {
			if err := s.restoreMoE(c); err == nil {
				return
			}
		}
		defer func() {
			if s.moeCache != "" && s.moeErr == nil {
				_ = writeGob(s.moeCache, s.snapshotMoE()) // best effort
			}
		}()
		rows, err := LoadMoE(s.dir, s.System, s.Backend)
		if err != nil {
			s.moeErr = err
			return
		}
		s.moeGrid = moeGrids(rows, nil)
		by := map[catalog.Precision][]MoERow{}
		for _, r := range rows {
			by[r.Key()] = append(by[r.Key()], r)
		}
		s.moe = map[catalog.Precision]*perf.MoEKernel{}
		for p, rs := range by {
			if len(rs) < MinMoERows {
				continue
			}
			k, err := FitMoE(rs)
			if err != nil {
				s.moeErr = fmt.Errorf("kernels: %s/%s moe %s: %w", s.System, s.Backend, p, err)
				return
			}
			s.moe[p] = &k
		}
	})
	return s.moe[w], s.moeErr
}

// Systems lists the system folders of a kernel tree (those with a system.yaml).
func Systems(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--kernels %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "system.yaml")); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--kernels %s: no system folders (each with a system.yaml); point it at the kernel tables' root, e.g. shared/reference/kernels", dir)
	}
	return out, nil
}

// Backends lists the backend folders of a system (trtllm, vllm, sglang).
func Backends(dir, system string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, system))
	if err != nil {
		return nil, fmt.Errorf("kernels: system %s: %w", system, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "nccl" {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Load reads a system's tables under one backend. The backend folder must
// hold one version folder (the newest measured one).
func Load(dir, system, backend string) (*Set, error) {
	s, _, err := LoadHoldingOut(dir, system, backend, nil)
	return s, err
}

// LoadHoldingOut is Load that keeps the measurements hold picks out of the
// tables and returns them, to test the tables on rows they never saw.
func LoadHoldingOut(dir, system, backend string, hold func(Sample) bool) (*Set, []Sample, error) {
	vdir, version, err := onlyVersion(filepath.Join(dir, system, backend))
	if err != nil {
		return nil, nil, err
	}
	gpu, err := readGPU(dir, system)
	if err != nil {
		return nil, nil, err
	}
	s := newSet(system, backend, version, gpu)
	s.dir = dir
	var held []Sample
	keep := func(smp Sample) bool {
		if !s.plausible(smp) {
			s.Dropped[smp.Op]++
			return false
		}
		if hold != nil && hold(smp) {
			held = append(held, smp)
			return false
		}
		return true
	}
	if err := s.load(dir, vdir, keep); err != nil {
		return nil, nil, err
	}
	return s, held, nil
}

func newSet(system, backend, version string, gpu GPU) *Set {
	return &Set{System: system, Backend: backend, Version: version, GPU: gpu, GEMM: map[string]*Grid{},
		ContextAttention: map[AttnKey]*Grid{}, GenerationAttention: map[AttnKey]*Grid{}, AllReduce: NewGrid(2),
		ContextMLA: map[AttnKey]*Grid{}, GenerationMLA: map[AttnKey]*Grid{}, GDN: map[string]*Grid{},
		Dropped: map[string]int{}, Stalled: map[string]int{}, Skipped: map[string]int{}}
}

func (s *Set) load(dir, vdir string, keep func(Sample) bool) error {
	if err := readTable(filepath.Join(vdir, "gemm_perf.csv.gz"), []string{"gemm_dtype", "m", "n", "k", "latency"}, func(r row) error {
		return s.add(Sample{Op: OpGEMM, Dtype: r.str(0), Key: []float64{r.num(1), r.num(2), r.num(3)}, Latency: r.num(4)}, keep)
	}); err != nil {
		return err
	}
	ctxCols := []string{"attn_dtype", "kv_cache_dtype", "head_dim", "window_size?", "num_heads", "num_key_value_heads", "isl", "batch_size", "latency"}
	if err := readTable(filepath.Join(vdir, "context_attention_perf.csv.gz"), ctxCols, func(r row) error {
		k, err := attnKey(r, r.str(0))
		if err != nil {
			return err
		}
		return s.add(Sample{Op: OpContextAttention, Attn: k, Key: []float64{r.num(4), r.num(5), r.num(6), r.num(7)}, Latency: r.num(8)}, keep)
	}); err != nil {
		return err
	}
	genCols := []string{"kv_cache_dtype", "kv_cache_dtype", "head_dim", "window_size?", "num_heads", "num_key_value_heads", "batch_size", "isl", "step", "latency"}
	if err := readTable(filepath.Join(vdir, "generation_attention_perf.csv.gz"), genCols, func(r row) error {
		k, err := attnKey(r, "")
		if err != nil {
			return err
		}
		return s.add(Sample{Op: OpGenerationAttention, Attn: k, Key: []float64{r.num(4), r.num(5), r.num(6), r.num(7) + r.num(8)}, Latency: r.num(9)}, keep)
	}); err != nil {
		return err
	}
	if err := s.loadMLA(vdir, keep); err != nil {
		return err
	}
	if err := s.loadGDN(vdir, keep); err != nil {
		return err
	}
	return s.loadAllReduce(dir, vdir, keep)
}

// add files a measurement in its table unless keep turns it away. Keys are
// checked first, so a key that is not a number is an error, never a row
// quietly dropped as implausible.
func (s *Set) add(smp Sample, keep func(Sample) bool) error {
	if err := checkKey(smp.Key); err != nil {
		return err
	}
	if !keep(smp) {
		return nil
	}
	s.table(smp, true).Add(smp.Key, smp.Latency)
	return nil
}

// checkKey says which key of a measurement is not a non-negative number.
func checkKey(key []float64) error {
	for i, v := range key {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("key %d of %v: want a non-negative number", i+1, key)
		}
	}
	return nil
}

// table is the grid a sample's operation and shape class belong to (nil
// when there is none and create is false).
func (s *Set) table(smp Sample, create bool) *Grid {
	get := func(g *Grid, dims int, put func(*Grid)) *Grid {
		if g == nil && create {
			g = NewGrid(dims)
			put(g)
		}
		return g
	}
	switch smp.Op {
	case OpGEMM:
		return get(s.GEMM[smp.Dtype], 3, func(g *Grid) { s.GEMM[smp.Dtype] = g })
	case OpContextAttention:
		return get(s.ContextAttention[smp.Attn], 4, func(g *Grid) { s.ContextAttention[smp.Attn] = g })
	case OpGenerationAttention:
		return get(s.GenerationAttention[smp.Attn], 4, func(g *Grid) { s.GenerationAttention[smp.Attn] = g })
	case OpContextMLA:
		return get(s.ContextMLA[smp.Attn], 3, func(g *Grid) { s.ContextMLA[smp.Attn] = g })
	case OpGenerationMLA:
		return get(s.GenerationMLA[smp.Attn], 3, func(g *Grid) { s.GenerationMLA[smp.Attn] = g })
	case OpGDN:
		return get(s.GDN[smp.Dtype], 3, func(g *Grid) { s.GDN[smp.Dtype] = g })
	case OpAllReduce:
		return s.AllReduce
	}
	return nil
}

func attnKey(r row, attnDtype string) (AttnKey, error) {
	hd, w := r.num(2), r.num(3)
	if math.IsNaN(w) && r.str(3) == "" {
		w = 0 // older files: no window means full attention
	}
	if hd != math.Trunc(hd) || w != math.Trunc(w) || hd <= 0 || w < 0 {
		return AttnKey{}, fmt.Errorf("head_dim %v / window_size %v: want integers", hd, w)
	}
	return AttnKey{AttnDtype: attnDtype, KVDtype: r.str(1), HeadDim: int(hd), Window: int(w)}, nil
}

// loadAllReduce takes the backend's CUDA-graph all-reduce rows, or NCCL's
// all_reduce of half precision when the backend has none.
func (s *Set) loadAllReduce(dir, vdir string, keep func(Sample) bool) error {
	err := readTable(filepath.Join(vdir, "custom_allreduce_perf.csv.gz"), []string{"kernel_source", "num_gpus", "message_size", "latency"}, func(r row) error {
		if strings.HasSuffix(strings.ToLower(r.str(0)), "_eager") {
			return nil
		}
		return s.add(Sample{Op: OpAllReduce, Key: []float64{r.num(1), r.num(2)}, Latency: r.num(3)}, keep)
	})
	if err != nil || s.AllReduce.Rows() > 0 {
		return err
	}
	ncclDir := filepath.Join(dir, s.System, "nccl")
	if _, err := os.Stat(ncclDir); errors.Is(err, os.ErrNotExist) {
		return nil // no collective tables: the model keeps the roofline
	}
	ndir, _, err := onlyVersion(ncclDir)
	if err != nil {
		return err
	}
	return readTable(filepath.Join(ndir, "nccl_perf.csv.gz"), []string{"op_name", "nccl_dtype", "num_gpus", "message_size", "latency"}, func(r row) error {
		if r.str(0) != "all_reduce" || r.str(1) != "half" {
			return nil
		}
		return s.add(Sample{Op: OpAllReduce, Key: []float64{r.num(2), r.num(3)}, Latency: r.num(4)}, keep)
	})
}

func onlyVersion(dir string) (string, string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", fmt.Errorf("kernels: %w", err)
	}
	var vs []string
	for _, e := range entries {
		if e.IsDir() {
			vs = append(vs, e.Name())
		}
	}
	if len(vs) == 0 {
		return "", "", fmt.Errorf("kernels: %s holds no version folder; want exactly one holding its tables (as vllm/0.19.0/gemm_perf.csv.gz), or remove the backend folder", dir)
	}
	if len(vs) != 1 {
		sort.Strings(vs)
		return "", "", fmt.Errorf("kernels: %s holds versions %v; want exactly one", dir, vs)
	}
	return filepath.Join(dir, vs[0]), vs[0], nil
}

// row is one CSV record with the wanted columns picked out in order.
type row struct {
	rec  []string
	cols []int
	nums []float64
	err  error
}

func (r row) str(i int) string {
	if r.cols[i] < 0 {
		return ""
	}
	return r.rec[r.cols[i]]
}
func (r row) num(i int) float64 { return r.nums[i] }

// readTable reads a gzip CSV, checks that the wanted columns exist and
// calls fn for each record. A value that does not parse names the file,
// line and column.
func readTable(path string, want []string, fn func(row) error) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // a table the system lacks: nothing to add
		}
		return fmt.Errorf("kernels: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", path, err)
	}
	return parseTable(path, zr, want, fn)
}

func parseTable(name string, rd io.Reader, want []string, fn func(row) error) error {
	cr := csv.NewReader(rd)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("kernels: %s: header: %w", name, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[h] = i
	}
	r := row{cols: make([]int, len(want)), nums: make([]float64, len(want))}
	for i, w := range want {
		optional := strings.HasSuffix(w, "?")
		w = strings.TrimSuffix(w, "?")
		c, ok := idx[w]
		if !ok && optional {
			r.cols[i] = -1
			continue
		}
		if !ok {
			return fmt.Errorf("kernels: %s: no column %q (has %s)", name, w, strings.Join(header, ","))
		}
		r.cols[i] = c
	}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kernels: %s: %w", name, err)
		}
		r.rec = rec
		for i, c := range r.cols {
			if c < 0 {
				r.nums[i] = math.NaN()
				continue
			}
			r.nums[i] = math.NaN() // a text column, or a number that does not parse
			if v, err := strconv.ParseFloat(rec[c], 64); err == nil {
				r.nums[i] = v
			}
		}
		if lat := r.nums[len(want)-1]; !(lat > 0) {
			return fmt.Errorf("kernels: %s line %d: latency %q: want a positive number of milliseconds", name, line, rec[r.cols[len(want)-1]])
		}
		if err := fn(r); err != nil {
			return fmt.Errorf("kernels: %s line %d: %w", name, line, err)
		}
	}
}
