package kernels

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
)

// DeepSeek sparse attention (DeepSeek-V3.2, GLM-5) puts a lightning indexer
// in front of each layer's MLA core: projections of its own, FP8 scores of
// every cached key, a top-k, then attention over the keys kept. The
// attention-block tables time the whole block of DSA models
// (dsa_generation_module) and of the MLA model they derive from
// (mla_generation_module, DeepSeek-V3) under one key: KV and GEMM dtypes,
// heads per GPU, batch and cached length. Where the top-k covers the whole
// cache and the batch is small, the two blocks read the same keys and do
// nearly the same FLOPs, so what one costs over the other is the indexer's
// kernels themselves: a fixed cost per layer the rooflines of its FLOPs and
// bytes cannot see.
const (
	// IndexerMaxBatch and IndexerMaxSeq bound the rows the indexer cost is
	// taken over: a few sequences (its own projections grow with the
	// batch) of contexts within every model's top-k of 2,048.
	IndexerMaxBatch = 16
	IndexerMaxSeq   = 1025
	// indexerBaseModel is the MLA model the DSA models derive from; its rows
	// are the baseline the DSA rows are compared with.
	indexerBaseModel = "deepseek-ai/DeepSeek-V3"
	// maxBlockMs bounds one attention block's time: a second is a thousand
	// times any measured block, and keeps every sum finite.
	maxBlockMs = 1000
)

// IndexerSample is what one system's tables under one backend say of the
// indexer.
type IndexerSample struct {
	System  string `json:"system"`
	Backend string `json:"backend"`
	// Rows is the DSA-block rows in the region (any DSA model); Matched
	// those with an MLA-block row of the same key.
	Rows    int `json:"rows"`
	Matched int `json:"matched"`
	// BlockUs is the median DSA block; IncrementUs the median DSA block
	// less the MLA block over the matched rows (0 when none matched).
	BlockUs     float64 `json:"block_us"`
	IncrementUs float64 `json:"increment_us,omitempty"`
}

// moduleKey is a module-table row's key: dtypes, heads per GPU, batch and
// cached length (isl + step).
type moduleKey struct {
	kv, gemm           string
	heads, batch, seqs float64
}

// ReadIndexer reads one system's DSA and MLA block tables under backend and
// summarises the region. A backend without a DSA table gives a zero sample
// (Rows 0) and no error; a table that cannot be read is an error.
func ReadIndexer(dir, system, backend string) (IndexerSample, error) {
	smp := IndexerSample{System: system, Backend: backend}
	vdir, _, err := onlyVersion(filepath.Join(dir, system, backend))
	if err != nil {
		return smp, err
	}
	cols := []string{"model", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size", "isl", "step", "latency"}
	// The fastest of repeated rows: a slower repeat is the collector's stall.
	read := func(table string, model func(string) bool) (map[moduleKey]float64, error) {
		out := map[moduleKey]float64{}
		err := readTable(filepath.Join(vdir, table), cols, func(r row) error {
			if !model(r.str(0)) {
				return nil
			}
			k := moduleKey{kv: r.str(1), gemm: r.str(2), heads: r.num(3), batch: r.num(4), seqs: r.num(5) + r.num(6)}
			lat := r.num(7)
			for _, v := range []float64{k.heads, k.batch, k.seqs, lat} {
				if !(v > 0) || math.IsInf(v, 0) {
					return fmt.Errorf("heads %v, batch %v, length %v, latency %v: want positive numbers", k.heads, k.batch, k.seqs, lat)
				}
			}
			if lat > maxBlockMs {
				return fmt.Errorf("latency %v ms: one attention block over %v ms is no measurement", lat, maxBlockMs)
			}
			if k.batch > IndexerMaxBatch || k.seqs > IndexerMaxSeq {
				return nil
			}
			if old, ok := out[k]; !ok || lat < old {
				out[k] = lat
			}
			return nil
		})
		return out, err
	}
	dsa, err := read("dsa_generation_module_perf.csv.gz", func(m string) bool { return m != indexerBaseModel })
	if err != nil || len(dsa) == 0 {
		return smp, err
	}
	mla, err := read("mla_generation_module_perf.csv.gz", func(m string) bool { return m == indexerBaseModel })
	if err != nil {
		return smp, err
	}
	var blocks, incs []float64
	for k, v := range dsa {
		blocks = append(blocks, v)
		if base, ok := mla[k]; ok {
			incs = append(incs, v-base)
		}
	}
	smp.Rows, smp.Matched = len(blocks), len(incs)
	smp.BlockUs = 1e3 * median(blocks)
	if len(incs) > 0 {
		// An indexer never saves time at these shapes; a negative median
		// would be a table that does not measure what this assumes.
		smp.IncrementUs = 1e3 * math.Max(0, median(incs))
	}
	return smp, nil
}

// median of xs (sorted in place); NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// IndexerResult is one architecture family's and backend's indexer cost.
type IndexerResult struct {
	Family  string `json:"family"`
	Backend string `json:"backend"`
	// Us is the fixed cost per sparse layer and iteration.
	Us float64 `json:"us"`
	// Systems are the systems whose tables gave it; Measured tells
	// whether they measured the increment itself (both block tables) or
	// only the DSA block, which is then scaled by Share: the family's
	// median indexer share of the block where both were measured.
	Systems  []string `json:"systems"`
	Measured bool     `json:"measured"`
	Share    float64  `json:"share,omitempty"`
	// HeldOut predicts each system's measured increment from the family's
	// other systems (under this backend), or for a shared-derived result
	// each measured increment of the family from the share of the others.
	HeldOut Score `json:"held_out"`
}

// FitIndexer takes each family's and backend's indexer cost from the
// samples: the median over its systems of the measured increment, or,
// for a backend whose tables time only the DSA block, the family's median
// share of the block times that backend's median block.
func FitIndexer(samples []IndexerSample, family func(system string) string) []IndexerResult {
	type fb struct{ fam, be string }
	groups := map[fb][]IndexerSample{}
	for _, s := range samples {
		if s.Rows > 0 {
			k := fb{family(s.System), s.Backend}
			groups[k] = append(groups[k], s)
		}
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b fb) int {
		return cmp.Or(cmp.Compare(a.fam, b.fam), cmp.Compare(a.be, b.be))
	})
	// shares lists a family's measured increments with their blocks.
	type share struct{ share, inc, block float64 }
	shares := map[string][]share{}
	for _, k := range keys {
		for _, s := range groups[k] {
			if s.Matched > 0 {
				shares[k.fam] = append(shares[k.fam], share{s.IncrementUs / s.BlockUs, s.IncrementUs, s.BlockUs})
			}
		}
	}
	var out []IndexerResult
	for _, k := range keys {
		res := IndexerResult{Family: k.fam, Backend: k.be}
		var incs, blocks []float64
		for _, s := range groups[k] {
			if s.Matched > 0 {
				incs = append(incs, s.IncrementUs)
				res.Systems = append(res.Systems, s.System)
			}
		}
		if len(incs) > 0 {
			res.Measured = true
			res.Us = median(slices.Clone(incs))
			var ape []float64
			for i := range incs {
				if len(incs) < 2 {
					break
				}
				others := slices.Delete(slices.Clone(incs), i, i+1)
				ape = append(ape, math.Abs(median(others)-incs[i])/incs[i])
			}
			res.HeldOut = scoreOf(ape)
			out = append(out, res)
			continue
		}
		fam := shares[k.fam]
		if len(fam) == 0 {
			continue // nothing in the family measured the increment
		}
		var all []float64
		for _, sh := range fam {
			all = append(all, sh.share)
		}
		res.Share = median(slices.Clone(all))
		for _, s := range groups[k] {
			blocks = append(blocks, s.BlockUs)
			res.Systems = append(res.Systems, s.System)
		}
		res.Us = res.Share * median(blocks)
		// Held out: each measured increment from the others' share.
		var ape []float64
		for i, sh := range fam {
			if len(fam) < 2 {
				break
			}
			var others []float64
			for j, o := range fam {
				if j != i {
					others = append(others, o.share)
				}
			}
			ape = append(ape, math.Abs(median(others)*sh.block-sh.inc)/sh.inc)
		}
		res.HeldOut = scoreOf(ape)
		out = append(out, res)
	}
	return out
}

// scoreOf is the mean of absolute relative errors as a Score.
func scoreOf(ape []float64) Score {
	var sc Score
	for _, a := range ape {
		if math.IsInf(a, 0) || math.IsNaN(a) {
			continue
		}
		sc.N++
		sc.MAPEPct += 100 * a
	}
	if sc.N > 0 {
		sc.MAPEPct /= float64(sc.N)
	}
	return sc
}
