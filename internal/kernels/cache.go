package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gpuplane/gpuplane/internal/atomicfile"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// cacheFormat changes whenever what a cache file holds, or how the tables
// are read into it, changes: old files then miss and are rebuilt.
const cacheFormat = "gpuplane-kernels-8"

// A parsed set, and the MoE summaries fitted to its table, are kept in a
// cache folder as gob files, one per system and backend, named by a hash
// of the tables they came from (path, size and modification time of every
// file under the backend's and the system's folders). Reading one takes a
// few milliseconds where parsing the gzip CSVs takes a few hundred; a
// changed table changes the name, so a stale file is never read. The cache
// is an optimisation only: a file that cannot be read or written is
// ignored, and the tables are parsed as without it.

// cachedGrid is one table, flattened: its leaves' keys (dims per leaf),
// values and the measurements averaged into each.
type cachedGrid struct {
	Op, Dtype string
	Attn      AttnKey
	Dims      int
	Keys      []float64
	Values    []float64
	Counts    []int32
}

type cachedSet struct {
	Format                    string
	System, Backend, Version  string
	GPU                       GPU
	Dropped, Stalled, Skipped map[string]int
	Grids                     []cachedGrid
}

type cachedMoE struct {
	Format  string
	Kernels map[catalog.Precision]perf.MoEKernel
	Grids   []cachedGrid // Dtype: the precision
}

func (s *Set) snapshotMoE() cachedMoE {
	c := cachedMoE{Format: cacheFormat, Kernels: map[catalog.Precision]perf.MoEKernel{}}
	for p, k := range s.moe {
		c.Kernels[p] = *k
	}
	for p, g := range s.moeGrid {
		c.Grids = append(c.Grids, flatten(OpMoE, string(p), AttnKey{}, g))
	}
	return c
}

func (s *Set) restoreMoE(c cachedMoE) error {
	grids := map[catalog.Precision]*Grid{}
	for _, cg := range c.Grids {
		g := NewGrid(4)
		if err := fill(g, cg); err != nil {
			return err
		}
		grids[catalog.Precision(cg.Dtype)] = g
	}
	s.moe = map[catalog.Precision]*perf.MoEKernel{}
	for p, k := range c.Kernels {
		s.moe[p] = &k
	}
	s.moeGrid = grids
	return nil
}

// flatten lists a grid's leaves for the cache.
func flatten(op, dtype string, attn AttnKey, g *Grid) cachedGrid {
	cg := cachedGrid{Op: op, Dtype: dtype, Attn: attn, Dims: g.dims}
	g.leaves(func(key []float64, v float64, n int) {
		cg.Keys = append(cg.Keys, key...)
		cg.Values = append(cg.Values, v)
		cg.Counts = append(cg.Counts, int32(n))
	})
	return cg
}

// fill puts a cached table's leaves into an empty grid of its dimensions.
func fill(g *Grid, cg cachedGrid) error {
	if cg.Dims != g.dims || len(cg.Keys) != cg.Dims*len(cg.Values) || len(cg.Counts) != len(cg.Values) {
		return fmt.Errorf("cached %s table: %d keys for %d values of %d dimensions", cg.Op, len(cg.Keys), len(cg.Values), cg.Dims)
	}
	for i, v := range cg.Values {
		g.put(cg.Keys[i*cg.Dims:(i+1)*cg.Dims], v, int(cg.Counts[i]))
	}
	return nil
}

// cacheKey names the cache files of a system and backend by what their
// tables are now.
func cacheKey(dir, system, backend string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", cacheFormat, system, backend)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	// The backend's tables, the system's facts and its NCCL tables, in a
	// fixed order (WalkDir walks lexically).
	for _, sub := range []string{filepath.Join(abs, system, backend), filepath.Join(abs, system, "nccl"), filepath.Join(abs, system, "system.yaml")} {
		err := filepath.WalkDir(sub, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			st, err := d.Info()
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00", p, st.Size(), st.ModTime().UnixNano())
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func (s *Set) snapshot() cachedSet {
	c := cachedSet{Format: cacheFormat, System: s.System, Backend: s.Backend, Version: s.Version, GPU: s.GPU, Dropped: s.Dropped, Stalled: s.Stalled, Skipped: s.Skipped}
	add := func(op, dtype string, attn AttnKey, g *Grid) {
		if g == nil {
			return
		}
		c.Grids = append(c.Grids, flatten(op, dtype, attn, g))
	}
	for d, g := range s.GEMM {
		add(OpGEMM, d, AttnKey{}, g)
	}
	for k, g := range s.ContextAttention {
		add(OpContextAttention, "", k, g)
	}
	for k, g := range s.GenerationAttention {
		add(OpGenerationAttention, "", k, g)
	}
	for k, g := range s.ContextMLA {
		add(OpContextMLA, "", k, g)
	}
	for k, g := range s.GenerationMLA {
		add(OpGenerationMLA, "", k, g)
	}
	for k, g := range s.GDN {
		add(OpGDN, k, AttnKey{}, g)
	}
	add(OpAllReduce, "", AttnKey{}, s.AllReduce)
	return c
}

// restore rebuilds a set from its snapshot; an inconsistent snapshot is
// an error (the caller then parses the tables).
func restore(c cachedSet, dir string) (*Set, error) {
	if c.Format != cacheFormat {
		return nil, fmt.Errorf("cache format %q", c.Format)
	}
	s := newSet(c.System, c.Backend, c.Version, c.GPU)
	s.dir = dir
	for op, n := range c.Dropped {
		s.Dropped[op] = n
	}
	for op, n := range c.Stalled {
		s.Stalled[op] = n
	}
	for why, n := range c.Skipped {
		s.Skipped[why] = n
	}
	for _, cg := range c.Grids {
		g := s.table(Sample{Op: cg.Op, Dtype: cg.Dtype, Attn: cg.Attn}, true)
		if g == nil {
			return nil, fmt.Errorf("cached %s table", cg.Op)
		}
		if err := fill(g, cg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func readGob(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return gob.NewDecoder(bytes.NewReader(b)).Decode(v)
}

func writeGob(path string, v any) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Replace(path, buf.Bytes(), 0o644)
}

// loadCached is Load through the cache folder cache ("" for none).
func loadCached(dir, cache, system, backend string) (*Set, error) {
	if cache == "" {
		return Load(dir, system, backend)
	}
	key, err := cacheKey(dir, system, backend)
	if err != nil {
		return Load(dir, system, backend)
	}
	path := filepath.Join(cache, key+".set.gob")
	var c cachedSet
	s, err := (*Set)(nil), readGob(path, &c)
	if err == nil {
		s, err = restore(c, dir)
	}
	if err != nil {
		if s, err = Load(dir, system, backend); err != nil {
			return nil, err
		}
		_ = writeGob(path, s.snapshot()) // best effort: the next run parses again
	}
	s.moeCache = filepath.Join(cache, key+".moe.gob")
	return s, nil
}
