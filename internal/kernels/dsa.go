package kernels

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"

	"github.com/gpuplane/gpuplane/internal/perf"
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
	// maxBlockMs bounds one attention block's time: 100 s is a thousand
	// times any measured block, and keeps every sum finite.
	maxBlockMs = 1e5
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

// readBlocks reads an attention-block table's rows of the models model
// admits and the keys keep admits, at the fastest of repeated rows (a
// slower repeat is the collector's stall). prompt reads whole prompts (the
// length is isl, rows with a cached prefix left out), else decode steps
// (isl + step cached). A table the backend lacks reads as empty.
func readBlocks(vdir, table string, model func(string) bool, prompt bool, keep func(moduleKey) bool) (map[moduleKey]float64, error) {
	cols := []string{"model", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size", "isl", "step", "latency"}
	out := map[moduleKey]float64{}
	err := readTable(filepath.Join(vdir, table), cols, func(r row) error {
		if !model(r.str(0)) || prompt && r.num(6) != 0 {
			return nil
		}
		k := moduleKey{kv: r.str(1), gemm: r.str(2), heads: r.num(3), batch: r.num(4), seqs: r.num(5)}
		if !prompt {
			k.seqs += r.num(6)
		}
		lat := r.num(7)
		for _, v := range []float64{k.heads, k.batch, k.seqs, lat} {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("heads %v, batch %v, length %v, latency %v: want positive numbers", k.heads, k.batch, k.seqs, lat)
			}
		}
		if lat > maxBlockMs {
			return fmt.Errorf("latency %v ms: one attention block over %v ms is no measurement", lat, maxBlockMs)
		}
		if !keep(k) {
			return nil
		}
		if old, ok := out[k]; !ok || lat < old {
			out[k] = lat
		}
		return nil
	})
	return out, err
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
	inRegion := func(k moduleKey) bool { return k.batch <= IndexerMaxBatch && k.seqs <= IndexerMaxSeq }
	read := func(table string, model func(string) bool) (map[moduleKey]float64, error) {
		return readBlocks(vdir, table, model, false, inRegion)
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
	sort.Float64s(xs)
	return perf.Quantile(xs, 0.5)
}

// famBackend keys rows by architecture family and backend.
type famBackend struct{ fam, be string }

// byFamilyBackend groups items by family and backend, the keys in order.
func byFamilyBackend[T any](items []T, key func(T) famBackend) ([]famBackend, map[famBackend][]T) {
	groups := map[famBackend][]T{}
	for _, it := range items {
		k := key(it)
		groups[k] = append(groups[k], it)
	}
	return slices.SortedFunc(maps.Keys(groups), func(a, b famBackend) int {
		return cmp.Or(cmp.Compare(a.fam, b.fam), cmp.Compare(a.be, b.be))
	}), groups
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
	keys, groups := byFamilyBackend(slices.DeleteFunc(slices.Clone(samples), func(s IndexerSample) bool { return s.Rows == 0 }),
		func(s IndexerSample) famBackend { return famBackend{family(s.System), s.Backend} })
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
			var pred, meas []float64
			for i := range incs {
				if len(incs) < 2 || incs[i] <= 0 {
					continue // nothing to hold out against, or nothing measured
				}
				pred, meas = append(pred, median(slices.Delete(slices.Clone(incs), i, i+1))), append(meas, incs[i])
			}
			res.HeldOut = score(pred, meas)
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
		var pred, meas []float64
		for i, sh := range fam {
			if len(fam) < 2 || sh.inc <= 0 {
				continue
			}
			others := slices.Delete(slices.Clone(all), i, i+1)
			pred, meas = append(pred, median(others)*sh.block), append(meas, sh.inc)
		}
		res.HeldOut = score(pred, meas)
		out = append(out, res)
	}
	return out
}

// The prompt side. dsa_context_module_perf and mla_context_module_perf time
// a prefill of the whole block (batch prompts of isl tokens, no cached
// prefix). The DSA block's excess over the MLA block is its indexer and
// sparse core on the prompt: scores for every causal query-key pair, a
// top-k per query and attention gathered over the keys kept, which the
// tables show barely changing with the heads a GPU holds (the indexer's
// heads are not split by tensor parallelism) and, past the top-k, growing
// linearly with the prompt (8,192 to 16,384 tokens doubles it), as the
// gathered attention's pairs under the window do.
const (
	// PrefillMaxHeads bounds the rows read: heads per GPU of tensor-parallel
	// serving (8 to 32 for these models at tp 4-8); at 64-128 heads the
	// sparse core's share grows.
	PrefillMaxHeads = 32
	// DSATopK is the keys each query keeps in the models the tables measure
	// (DeepSeek-V3.2 and GLM-5 alike).
	DSATopK = 2048
	// MinPrefillRows is the fewest rows with an excess a cost is fitted on.
	MinPrefillRows = 20
	prefillMinISL  = 256
	prefillMaxISL  = 32768
)

// PrefillExcess is one prefill shape's DSA block less its MLA block (ms).
type PrefillExcess struct {
	System, Backend string
	Batch, ISL      float64
	Ms              float64
	// Borrowed says the MLA block came from another backend on the same
	// system (the fastest measured), the backend having no MLA table.
	Borrowed bool
}

// Tokens is the shape's prompt tokens; Pairs its causal query-key pairs
// under the top-k window (a query attends to at most DSATopK keys), the
// gathered attention's work, which grows linearly past the window.
func (e PrefillExcess) Tokens() float64 { return e.Batch * e.ISL }
func (e PrefillExcess) Pairs() float64 {
	k := math.Min(e.ISL, DSATopK)
	return e.Batch * (k*(k+1)/2 + (e.ISL-k)*DSATopK)
}

// ReadPrefillExcess reads one system's prefill block tables under every
// backend given and returns each DSA row's excess over the MLA row of the
// same key: the backend's own MLA row, or the fastest other backend's on
// the same system where it has none.
func ReadPrefillExcess(dir, system string, backends []string) ([]PrefillExcess, error) {
	inRegion := func(k moduleKey) bool {
		return k.heads <= PrefillMaxHeads && k.seqs >= prefillMinISL && k.seqs <= prefillMaxISL
	}
	read := func(vdir, table string, model func(string) bool) (map[moduleKey]float64, error) {
		return readBlocks(vdir, table, model, true, inRegion)
	}
	dsa, mla := map[string]map[moduleKey]float64{}, map[string]map[moduleKey]float64{}
	for _, b := range backends {
		vdir, _, err := onlyVersion(filepath.Join(dir, system, b))
		if err != nil {
			return nil, err
		}
		if dsa[b], err = read(vdir, "dsa_context_module_perf.csv.gz", func(m string) bool { return m != indexerBaseModel }); err != nil {
			return nil, err
		}
		if mla[b], err = read(vdir, "mla_context_module_perf.csv.gz", func(m string) bool { return m == indexerBaseModel }); err != nil {
			return nil, err
		}
	}
	var out []PrefillExcess
	for _, b := range backends {
		keys := slices.SortedFunc(maps.Keys(dsa[b]), func(x, y moduleKey) int {
			return cmp.Or(cmp.Compare(x.kv, y.kv), cmp.Compare(x.gemm, y.gemm), cmp.Compare(x.heads, y.heads), cmp.Compare(x.batch, y.batch), cmp.Compare(x.seqs, y.seqs))
		})
		for _, k := range keys {
			base, ok := mla[b][k]
			borrowed := false
			if len(mla[b]) == 0 {
				for _, o := range backends {
					if v, has := mla[o][k]; has && (!borrowed || v < base) {
						base, borrowed = v, true
					}
				}
				ok = borrowed
			}
			if !ok {
				continue
			}
			out = append(out, PrefillExcess{System: system, Backend: b, Batch: k.batch, ISL: k.seqs, Ms: math.Max(0, dsa[b][k]-base), Borrowed: borrowed})
		}
	}
	return out, nil
}

// PrefillResult is one family's and backend's prompt-side indexer cost.
type PrefillResult struct {
	Family, Backend string
	Systems         []string
	Rows            int
	Borrowed        bool
	Cost            SparsePrefill
	// HeldOut predicts each system's rows by a fit on the family's others.
	HeldOut  Score
	BySystem map[string]Score
}

// SparsePrefill prices the excess: CallUs per prefill iteration, TokenUs
// per prompt token and PairPs per causal query-key pair under the top-k
// window, each per sparse layer.
type SparsePrefill struct {
	CallUs, TokenUs, PairPs float64
}

// Ms is the excess the cost puts on e.
func (c SparsePrefill) Ms(e PrefillExcess) float64 {
	return 1e-3*c.CallUs + 1e-3*c.TokenUs*e.Tokens() + 1e-9*c.PairPs*e.Pairs()
}

// FitSparsePrefill fits the three numbers to rows by Nelder-Mead on the
// mean squared log error (rows of no excess are left out: a log of zero).
func FitSparsePrefill(rows []PrefillExcess) (SparsePrefill, error) {
	var use []PrefillExcess
	for _, r := range rows {
		if r.Ms > 0 {
			use = append(use, r)
		}
	}
	if len(use) < 3 {
		return SparsePrefill{}, fmt.Errorf("sparse prefill fit: %d rows with an excess; need at least 3", len(use))
	}
	unpack := func(x []float64) SparsePrefill {
		return SparsePrefill{CallUs: math.Min(1e5, math.Exp(x[0])), TokenUs: math.Min(1e3, math.Exp(x[1])), PairPs: math.Min(1e6, math.Exp(x[2]))}
	}
	c, err := fitLogError(use, unpack, func(c SparsePrefill, r PrefillExcess) float64 { return c.Ms(r) / r.Ms },
		[]float64{math.Log(50), math.Log(0.2), math.Log(50)})
	if err != nil {
		return SparsePrefill{}, fmt.Errorf("sparse prefill fit: %w", err)
	}
	return c, nil
}

// ScoreSparsePrefill scores c on rows with an excess.
func ScoreSparsePrefill(c SparsePrefill, rows []PrefillExcess) Score {
	var pred, meas []float64
	for _, r := range rows {
		if r.Ms > 0 {
			pred, meas = append(pred, c.Ms(r)), append(meas, r.Ms)
		}
	}
	return score(pred, meas)
}

// FitSparsePrefillFamilies fits each family's and backend's cost on its
// systems' rows pooled, and holds each system out in turn.
func FitSparsePrefillFamilies(rows []PrefillExcess, family func(system string) string) ([]PrefillResult, error) {
	keys, groups := byFamilyBackend(rows, func(r PrefillExcess) famBackend { return famBackend{family(r.System), r.Backend} })
	var out []PrefillResult
	for _, k := range keys {
		rs := groups[k]
		if n := len(slices.DeleteFunc(slices.Clone(rs), func(r PrefillExcess) bool { return !(r.Ms > 0) })); n < MinPrefillRows {
			continue // a few shapes would describe those shapes, not the kernels
		}
		c, err := FitSparsePrefill(rs)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", k.fam, k.be, err)
		}
		res := PrefillResult{Family: k.fam, Backend: k.be, Rows: len(rs), Cost: c, Borrowed: rs[0].Borrowed,
			Systems: systemsOf(rs, func(r PrefillExcess) string { return r.System })}
		if len(res.Systems) > 1 {
			by, err := scoreBySystem(res.Systems, rs, func(r PrefillExcess) string { return r.System }, FitSparsePrefill, ScoreSparsePrefill)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", k.fam, k.be, err)
			}
			res.BySystem = by
			var n int
			var sum float64
			for _, sys := range res.Systems { // in order: the same sum every run
				sc := by[sys]
				n += sc.N
				sum += sc.MAPEPct * float64(sc.N)
			}
			if n > 0 {
				res.HeldOut = Score{N: n, MAPEPct: sum / float64(n)}
			}
		}
		out = append(out, res)
	}
	return out, nil
}
