package kernels

import "github.com/gpuplane/gpuplane/internal/catalog"

// OpMoE samples carry (experts, top-k, weights per expert and GPU, tokens)
// as their key and the summary key (MoERow.Key) as their Dtype.

// moeSample is a fused-MoE row as a table sample.
func moeSample(r MoERow) Sample {
	return Sample{Op: OpMoE, Dtype: string(r.Key()),
		Key: []float64{r.Shape.Experts, r.Shape.TopK, r.Shape.ExpertParams, r.Shape.Tokens}, Latency: r.Seconds * 1e3}
}

// moeGrids files fused-MoE rows into one table per summary key over
// (experts, top-k, weights per expert and GPU, tokens): a model's experts
// are one shape class, and a query interpolates along the tokens (and
// between the tensor-parallel slicings measured). keep turns rows away.
func moeGrids(rows []MoERow, keep func(Sample) bool) map[catalog.Precision]*Grid {
	out := map[catalog.Precision]*Grid{}
	for _, r := range rows {
		smp := moeSample(r)
		if keep != nil && !keep(smp) {
			continue
		}
		g := out[r.Key()]
		if g == nil {
			g = NewGrid(4)
			out[r.Key()] = g
		}
		g.Add(smp.Key, smp.Latency)
	}
	return out
}

// MoETime is the measured time (ms) of a fused-MoE call at a precision, for
// a shape class (experts, top-k, weights per expert and GPU) the table
// measured, at any token count; ok is false for a class it did not measure.
// It is the op-level model of the MoE tables (TestHeldOutMoERows). Serving
// prices experts with the fitted summary instead: priced from the tables,
// the measured runs' MoE TPOT came out worse (see PERFORMANCE-MODEL.md).
func (s *Set) MoETime(p catalog.Precision, experts, topK, expertParams, tokens float64) (float64, bool) {
	if _, err := s.MoEKernel(p); err != nil { // reads the table on first use
		return 0, false
	}
	return moeLookup(s.moeGrid[p], []float64{experts, topK, expertParams, tokens})
}

// moeLookup answers key from an MoE table (nil: none) when its shape class
// (all but the tokens) was measured.
func moeLookup(g *Grid, key []float64) (float64, bool) {
	if g == nil {
		return 0, false
	}
	v, at, ok := g.Lookup(key)
	if !ok || at[0] != key[0] || at[1] != key[1] || at[2] != key[2] {
		return 0, false
	}
	return v, true
}
