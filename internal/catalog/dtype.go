package catalog

import (
	"fmt"
	"strings"
)

// Precision is a numeric format for weights, activations or the KV cache.
type Precision string

// Supported precisions.
const (
	BF16 Precision = "bf16"
	FP8  Precision = "fp8"
	FP4  Precision = "fp4"
	// INT8 is w8a8: int8 weights and activations on int8 tensor cores.
	INT8 Precision = "int8"
	// W4A16 is 4-bit weight-only quantisation (AWQ, GPTQ): weights stored
	// in 4 bits with a scale per group of 128, dequantised to bf16 for the
	// tensor cores, so it saves memory and bandwidth but no FLOPs.
	W4A16 Precision = "w4a16"
)

// Precisions lists the supported precisions in order of decreasing width.
var Precisions = []Precision{BF16, INT8, FP8, W4A16, FP4}

// ParsePrecision accepts the common spellings used by serving engines and
// quantised checkpoints (fp16, float16, nvfp4, mxfp4, fp8_block, ...) and
// the quant-mode names of the measured data (int4_wo).
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "bfloat16", "fp16", "float16", "half", "auto":
		return BF16, nil
	case "fp8", "fp8_e4m3", "e4m3", "fp8_block", "float8":
		return FP8, nil
	case "fp4", "nvfp4", "mxfp4", "w4a4":
		return FP4, nil
	case "int8", "w8a8", "int8_w8a8", "smoothquant":
		return INT8, nil
	case "w4a16", "awq", "gptq", "awq_marlin", "gptq_marlin", "int4", "int4_awq", "int4_wo":
		return W4A16, nil
	}
	return "", fmt.Errorf("unknown precision %q: use one of bf16, fp8, int8, w4a16 (AWQ/GPTQ), fp4", s)
}

// Bytes is the storage size of one element, including block scales for the
// quantised formats (one fp8 scale per 16 fp4 values, per 128x128 fp8 block).
func (p Precision) Bytes() float64 {
	switch p {
	case FP8:
		return 1.0 + 1.0/(128*128)*4
	case FP4:
		return 0.5 + 1.0/16
	case INT8:
		return 1.0 // per-channel scales are negligible
	case W4A16:
		return 0.5 + 2.0/128 // one bf16 scale per group of 128
	default:
		return 2
	}
}

// WeightOnly reports formats whose GEMMs run at the activations' bf16 rate.
func (p Precision) WeightOnly() bool { return p == W4A16 }

// CacheFormat reports whether the KV cache can be stored in p: the
// engines store it in bf16, fp8 or (TensorRT-LLM on Ampere) int8.
func (p Precision) CacheFormat() bool { return p == BF16 || p == FP8 || p == INT8 }
