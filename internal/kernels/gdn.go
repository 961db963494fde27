package kernels

import (
	"fmt"
	"math"
	"path/filepath"
)

// OpGDN is a gated delta-net (linear attention) layer's kernel: its short
// convolution or its state update, in prefill or decode (gdn_perf).
// Samples carry "kernel/phase" as Dtype and (value heads, batch, sequence
// length) as Key; decode runs one token per sequence.
const OpGDN = "gdn"

// The tables measure Qwen3.5's layers: 16 key heads of 128 and value
// heads of 128, the value heads varying with the model.
const gdnHeadDim = 128

// gdnOtherShape is the Skipped reason of rows of another head shape.
const gdnOtherShape = "gdn rows of another head shape than 16 key heads of 128, value heads of 128, convolution 4"

// gdnCost is the work of a linear-attention kernel that extrapolation
// scales by: every kernel is linear in tokens and value heads (the state is
// heads x 128 x 128, the convolution's channels grow with the value heads).
func gdnCost(x []float64) float64 { return x[0] * gdnHeadDim * x[1] * x[2] }

// loadGDN reads the gated delta-net table where the backend has one. The
// model-shape columns other than the value heads are the same in every row
// (16 key heads, head sizes of 128, a 4-wide convolution); rows of another
// shape are left out and counted in Skipped, since the key would not tell
// them apart, and a newer table must not fail every model's estimate.
func (s *Set) loadGDN(vdir string, keep func(Sample) bool) error {
	cols := []string{"kernel_source", "phase", "num_k_heads", "head_k_dim", "head_v_dim", "d_conv", "num_v_heads", "batch_size", "seq_len", "latency"}
	return readTable(filepath.Join(vdir, "gdn_perf.csv.gz"), cols, func(r row) error {
		if r.num(2) != 16 || r.num(3) != gdnHeadDim || r.num(4) != gdnHeadDim || r.num(5) != 4 {
			s.Skipped[gdnOtherShape]++
			return nil
		}
		seq := r.num(8)
		switch r.str(1) {
		case "generation":
			seq = 1
		case "context":
		default:
			return fmt.Errorf("phase %q: want context or generation", r.str(1))
		}
		if math.IsNaN(seq) {
			return fmt.Errorf("seq_len %q: want a number", r.str(8))
		}
		return s.add(Sample{Op: OpGDN, Dtype: r.str(0) + "/" + r.str(1), Key: []float64{r.num(6), r.num(7), seq}, Latency: r.num(9)}, keep)
	})
}

// GDNTime is the time (ms) of one gated delta-net kernel call ("kernel/phase").
func (s *Set) GDNTime(kernel string, valueHeads, batch, seq float64) (float64, bool) {
	return answer(s.GDN[kernel], []float64{valueHeads, batch, seq}, gdnCost)
}
