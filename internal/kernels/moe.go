package kernels

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// OpMoE is the fused routed-expert kernel (moe_perf).
const OpMoE = "moe"

// MoERow is one measured fused-MoE call on one GPU, with the GPU's roofline.
type MoERow struct {
	System    string
	Precision catalog.Precision // the model's weight precision the kernel serves
	// MXFP4 marks fp4 rows of MXFP4 weights (w4a16_mxfp4,
	// w4a8_mxfp4_mxfp8): a kernel of their own, summarised apart from
	// NVFP4's (perf.MoEKey).
	MXFP4  bool
	Kernel string // kernel_source
	Shape  perf.MoEShape
	// Peak and BW are the system's raw tensor peak for the precision and its
	// memory bandwidth (system.yaml).
	Peak, BW float64
	Seconds  float64
}

// Key is the summary the row is fitted into: its precision, or
// perf.MXFP4 for MXFP4 rows.
func (r MoERow) Key() catalog.Precision { return perf.MoEKey(r.Precision, r.MXFP4) }

// moePrecision maps a moe_dtype to the weight precision a model states.
// Quant modes the performance model has no precision for are skipped.
func moePrecision(dtype string) (catalog.Precision, bool) {
	switch dtype {
	case "bfloat16", "float16":
		return catalog.BF16, true
	case "fp8", "fp8_block":
		return catalog.FP8, true
	case "nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8":
		return catalog.FP4, true
	case "int4_wo":
		return catalog.W4A16, true
	}
	return "", false
}

// moePeak is the tensor peak the performance model prices a precision's
// expert GEMMs against: native fp8 and fp4 where the GPU has them, else bf16
// (weight-only kernels dequantise to bf16).
func (g GPU) moePeak(p catalog.Precision) float64 {
	switch p {
	case catalog.FP8:
		if g.FP8FLOPS > 0 {
			return g.FP8FLOPS
		}
	case catalog.FP4:
		if g.FP4FLOPS > 0 {
			return g.FP4FLOPS
		}
	}
	return g.BF16FLOPS
}

// LoadMoE reads a system's moe_perf table under one backend: the balanced
// routing rows of gated experts without expert parallelism, one row per
// shape and precision. Expert-parallel rows are left out: at large ep they
// are a few experts' launch-bound calls, and fitted together with the rest
// they double the held-out error of the shapes serving runs use. Skewed
// distributions are a separate question (expert-load imbalance) from the
// kernel's speed.
//
// Where a backend measured several kernels for one shape, the fastest
// stands for it: engines pick their kernel per shape. TensorRT-LLM's
// min-latency kernels are left out: the engine runs them only in its
// min-latency mode, and they cover a few shapes at a third of the time,
// which no smooth summary of the rest can absorb. Per-tensor and block FP8 are not
// alternatives but different checkpoints; the FP8 MoE checkpoints in use
// (DeepSeek, Qwen3, MiniMax, Kimi) quantise in blocks, so block rows stand
// for fp8 where a table has them.
func LoadMoE(dir, system, backend string) ([]MoERow, error) {
	return loadMoE(dir, system, backend, summaryRows)
}

// loadMoE reads the rows of one kind from a system's moe_perf table under
// one backend (none: a backend without a MoE table).
func loadMoE(dir, system, backend string, kind moeRowKind) ([]MoERow, error) {
	gpu, err := readGPU(dir, system)
	if err != nil {
		return nil, err
	}
	vdir, _, err := onlyVersion(filepath.Join(dir, system, backend))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(vdir, "moe_perf.csv.gz")
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // a backend without a MoE table
	}
	if err != nil {
		return nil, fmt.Errorf("kernels: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("kernels: %s: %w", path, err)
	}
	return parseMoERows(path, zr, system, gpu, kind)
}

// SkewedEPMaxTokens is the most tokens of the skewed expert-parallel rows
// LoadMoESkewedEP keeps: decode batches, where the busiest rank draws
// well more experts than the mean one.
const SkewedEPMaxTokens = 64

// LoadMoESkewedEP reads a system's moe_perf rows that check the pricing of
// expert parallelism: experts whole on each of moe_ep_size GPUs (no
// tensor parallelism inside them), routed by a power law, at decode batch
// sizes. The tables measure the rank that draws the most picks. No
// summary is fitted on them (skew is not random routing: at larger
// batches the power law keeps one rank hot, random routing evens out);
// they score how far pricing the busiest rank under random routing
// closes on them, against pricing the mean rank.
func LoadMoESkewedEP(dir, system, backend string) ([]MoERow, error) {
	return loadMoE(dir, system, backend, skewedEPRows)
}

// parseMoE reads a moe_perf CSV's summary rows (see LoadMoE).
func parseMoE(name string, rd io.Reader, system string, gpu GPU) ([]MoERow, error) {
	return parseMoERows(name, rd, system, gpu, summaryRows)
}

// moeRowKind is which of a moe_perf table's rows a reader keeps.
type moeRowKind int

const (
	// summaryRows are the rows a summary is fitted on (LoadMoE).
	summaryRows moeRowKind = iota
	// skewedEPRows are the rows that check the busiest-rank pricing
	// (LoadMoESkewedEP).
	skewedEPRows
)

// parseMoERows reads a moe_perf CSV, keeping the rows of one kind.
func parseMoERows(name string, rd io.Reader, system string, gpu GPU, kind moeRowKind) ([]MoERow, error) {
	// A shape is its table key: hidden and intermediate sizes apart, since
	// two models' experts can hold the same weights per GPU.
	type key struct {
		class, dist                   string
		tokens, hidden, inter, tp, ep float64
		topk, experts                 float64
	}
	fastest := map[key]int{}
	var all []MoERow
	var classes []string
	want := []string{"kernel_source", "moe_dtype", "distribution", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "latency"}
	err := parseTable(name, rd, want, func(r row) error {
		src, dtype, dist := r.str(0), r.str(1), r.str(2)
		if strings.Contains(src, "nongated") || strings.Contains(src, "min_latency") {
			return nil
		}
		balanced := dist == "balanced" || dist == "uniform"
		if kind == summaryRows && (!balanced || r.num(9) != 1) {
			return nil
		}
		if kind == skewedEPRows && (!strings.HasPrefix(dist, "power_law") || r.num(8) != 1 || r.num(9) < 2 || r.num(3) > SkewedEPMaxTokens) {
			return nil
		}
		prec, ok := moePrecision(dtype)
		if !ok {
			return nil
		}
		tokens, hidden, inter, topk, experts, tp, ep := r.num(3), r.num(4), r.num(5), r.num(6), r.num(7), r.num(8), r.num(9)
		for i, v := range []float64{tokens, hidden, inter, topk, experts, tp, ep} {
			if !(v >= 1 && v <= 1e9) {
				return fmt.Errorf("%s %v: want a whole number in [1, 1e9]", want[3+i], v)
			}
		}
		if topk > experts {
			return fmt.Errorf("topk %v exceeds num_experts %v", topk, experts)
		}
		if ep > experts {
			return fmt.Errorf("moe_ep_size %v exceeds num_experts %v", ep, experts)
		}
		shape := perf.MoEShape{Tokens: tokens, TopK: topk, Experts: experts,
			ExpertParams: 3 * hidden * inter / tp, WeightBytes: prec.Bytes(), Eager: true, Balanced: true}
		if kind == skewedEPRows {
			// The whole experts spread over ep GPUs, priced as the model
			// prices an expert-parallel group: each GPU's share of every
			// expert, at the busiest rank (Ranks).
			shape.ExpertParams, shape.SliceParams = 3*hidden*inter/ep, 3*hidden*inter
			shape.Balanced, shape.Ranks = false, ep
		}
		m := MoERow{
			System: system, Precision: prec, MXFP4: strings.Contains(dtype, "mxfp4"), Kernel: src, Shape: shape,
			Peak: gpu.moePeak(prec), BW: gpu.MemBW,
			Seconds: r.num(10) * 1e-3,
		}
		class := string(m.Key())
		if dtype == "fp8" {
			class = "fp8-per-tensor"
		}
		// Skewed rows of one shape measure two skews; summary rows keep
		// the fastest of balanced and uniform.
		kd := ""
		if kind == skewedEPRows {
			kd = dist
		}
		k := key{class, kd, tokens, hidden, inter, tp, ep, topk, experts}
		if i, ok := fastest[k]; ok {
			if m.Seconds < all[i].Seconds {
				all[i] = m
			}
			return nil
		}
		if !slices.Contains(classes, class) {
			classes = append(classes, class)
		}
		fastest[k] = len(all)
		all = append(all, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	hasBlock := slices.Contains(classes, string(catalog.FP8))
	// A new slice: appending into all's own array would overwrite rows
	// that later map entries still point at.
	out := make([]MoERow, 0, len(fastest))
	for k, i := range fastest {
		if k.class == "fp8-per-tensor" && hasBlock {
			continue
		}
		out = append(out, all[i])
	}
	// Map order is random; the fit and its held-out split want one order.
	slices.SortFunc(out, func(a, b MoERow) int {
		if c := strings.Compare(string(a.Key()), string(b.Key())); c != 0 {
			return c
		}
		for _, d := range [][2]float64{{a.Shape.ExpertParams, b.Shape.ExpertParams}, {a.Shape.SliceParams, b.Shape.SliceParams}, {a.Shape.Experts, b.Shape.Experts}, {a.Shape.TopK, b.Shape.TopK}, {a.Shape.Tokens, b.Shape.Tokens}, {a.Seconds, b.Seconds}} {
			if d[0] != d[1] {
				if d[0] < d[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	return out, nil
}
