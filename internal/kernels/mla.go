package kernels

import (
	"path/filepath"
	"sort"
)

// stallFactor: a measurement this many times slower than a measurement of
// a shape at least as large in every key is a stall of the collector (a
// contended or unwarmed run), not the kernel. Attention time never falls
// as heads, batch or length grow.
const stallFactor = 1.5

// maxStallRows bounds the tables stalls are looked for in: the search is
// quadratic in a table's rows, and the measured MLA tables hold at most a
// few thousand. A larger table keeps its rows as they are.
const maxStallRows = 20000

// Multi-head latent attention (DeepSeek-V3 style) kernel tables: the
// attention core alone, without the projections around it.
const (
	// OpContextMLA is prefill MLA over (heads per GPU, isl, batch).
	OpContextMLA = "context_mla"
	// OpGenerationMLA is one decode step of absorbed MLA over (heads per
	// GPU, batch, kv length).
	OpGenerationMLA = "generation_mla"
)

// The tables measure DeepSeek-V3's MLA shape (SCHEMA.md: 128 heads in
// total); the rooflines that extrapolate them use it.
const (
	mlaQKDim     = 192 // nope 128 + rope 64: the query-key dot product per head
	mlaVDim      = 128 // value head size
	mlaLatentDim = 512 // the compressed KV (kv_lora_rank)
	mlaRopeDim   = 64
)

// ContextMLARoofline is the roofline time (ms) of causal prefill MLA: the
// decompressed heads attend as ordinary attention with 192-wide keys and
// 128-wide values.
func (g GPU) ContextMLARoofline(k AttnKey, heads, isl, batch float64) float64 {
	pairs := isl * (isl + 1) / 2
	flops := 2 * batch * heads * pairs * (mlaQKDim + mlaVDim)
	peak := g.BF16FLOPS
	if k.AttnDtype == "fp8" && g.FP8FLOPS > 0 {
		peak = g.FP8FLOPS
	}
	// Queries, keys, values and outputs once each, 16-bit.
	bytes := batch * isl * heads * (2*mlaQKDim + 2*mlaVDim) * 2
	return 1e3 * g.roof(flops, peak, bytes)
}

// GenerationMLARoofline is the roofline time (ms) of one absorbed-MLA
// decode step: every head reads the shared latent cache and does a dot
// product over latent and rope parts and a latent-wide weighted sum.
func (g GPU) GenerationMLARoofline(k AttnKey, heads, batch, kvLen float64) float64 {
	flops := 2 * batch * heads * kvLen * (2*mlaLatentDim + mlaRopeDim)
	bytes := batch * kvLen * (mlaLatentDim + mlaRopeDim) * kvBytes(k.KVDtype)
	return 1e3 * g.roof(flops, g.BF16FLOPS, bytes)
}

// loadMLA reads the context and generation MLA tables where the backend
// has them. One kernel source per table (SGLang's differs by GPU), so the
// key is the dtypes alone.
func (s *Set) loadMLA(vdir string, keep func(Sample) bool) error {
	// Rows are checked as read, so that an error names the file and line;
	// they are filed once the whole table is in (stalls need every row).
	var rows []Sample
	collect := func(smp Sample) error {
		if err := checkKey(smp.Key); err != nil {
			return err
		}
		rows = append(rows, smp)
		return nil
	}
	if err := readTable(filepath.Join(vdir, "context_mla_perf.csv.gz"), []string{"mla_dtype", "kv_cache_dtype", "num_heads", "isl", "batch_size", "latency"}, func(r row) error {
		return collect(Sample{Op: OpContextMLA, Attn: AttnKey{AttnDtype: r.str(0), KVDtype: r.str(1)},
			Key: []float64{r.num(2), r.num(3), r.num(4)}, Latency: r.num(5)})
	}); err != nil {
		return err
	}
	if err := readTable(filepath.Join(vdir, "generation_mla_perf.csv.gz"), []string{"kv_cache_dtype", "num_heads", "isl", "batch_size", "step", "latency"}, func(r row) error {
		// The KV length is isl + step, as for generation attention.
		return collect(Sample{Op: OpGenerationMLA, Attn: AttnKey{KVDtype: r.str(0)},
			Key: []float64{r.num(1), r.num(3), r.num(2) + r.num(4)}, Latency: r.num(5)})
	}); err != nil {
		return err
	}
	stalled := stalls(rows)
	for i, smp := range rows {
		if stalled[i] {
			s.Stalled[smp.Op]++
			continue
		}
		if err := s.add(smp, keep); err != nil {
			return err
		}
	}
	return nil
}

// stalls marks the measurements stallFactor times slower than one of the
// same table whose every key is at least as large. Within a table, only
// rows that much faster can mark a row, so each row looks at the faster
// end of its table's rows sorted by latency.
func stalls(rows []Sample) []bool {
	type table struct {
		op   string
		attn AttnKey
	}
	by := map[table][]int{}
	for i, r := range rows {
		k := table{r.Op, r.Attn}
		by[k] = append(by[k], i)
	}
	out := make([]bool, len(rows))
	for _, idx := range by {
		if len(idx) > maxStallRows {
			continue
		}
		sort.Slice(idx, func(a, b int) bool { return rows[idx[a]].Latency < rows[idx[b]].Latency })
		for _, i := range idx {
			a := rows[i]
			for _, j := range idx {
				b := rows[j]
				if b.Latency*stallFactor >= a.Latency {
					break
				}
				if covers(b.Key, a.Key) {
					out[i] = true
					break
				}
			}
		}
	}
	return out
}

// covers says whether every key of b is at least a's.
func covers(b, a []float64) bool {
	for i := range a {
		if b[i] < a[i] {
			return false
		}
	}
	return true
}

// ContextMLATime is the time (ms) of one prefill MLA call.
func (s *Set) ContextMLATime(k AttnKey, heads, isl, batch float64) (float64, bool) {
	return answer(s.ContextMLA[k], []float64{heads, isl, batch}, func(x []float64) float64 {
		return s.GPU.ContextMLARoofline(k, x[0], x[1], x[2])
	})
}

// GenerationMLATime is the time (ms) of one absorbed-MLA decode step.
func (s *Set) GenerationMLATime(kvDtype string, heads, batch, kvLen float64) (float64, bool) {
	k := AttnKey{KVDtype: kvDtype}
	return answer(s.GenerationMLA[k], []float64{heads, batch, kvLen}, func(x []float64) float64 {
		return s.GPU.GenerationMLARoofline(k, x[0], x[1], x[2])
	})
}
