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
)

// Precisions lists the supported precisions in order of decreasing width.
var Precisions = []Precision{BF16, FP8, FP4}

// ParsePrecision accepts the common spellings used by serving engines and
// quantised checkpoints (fp16, float16, nvfp4, mxfp4, fp8_block, ...).
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "bfloat16", "fp16", "float16", "half", "auto":
		return BF16, nil
	case "fp8", "fp8_e4m3", "e4m3", "fp8_block", "float8":
		return FP8, nil
	case "fp4", "nvfp4", "mxfp4", "w4a4":
		return FP4, nil
	}
	return "", fmt.Errorf("unknown precision %q: use one of bf16, fp8, fp4", s)
}

// Bytes is the storage size of one element, including block scales for the
// quantised formats (one fp8 scale per 16 fp4 values, per 128x128 fp8 block).
func (p Precision) Bytes() float64 {
	switch p {
	case FP8:
		return 1.0 + 1.0/(128*128)*4
	case FP4:
		return 0.5 + 1.0/16
	default:
		return 2
	}
}
