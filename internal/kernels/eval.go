package kernels

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"sort"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// Operation kinds.
const (
	OpGEMM                = "gemm"
	OpContextAttention    = "context_attention"
	OpGenerationAttention = "generation_attention"
	OpAllReduce           = "all_reduce"
)

// Sample is one measurement: the operation, its table keys and its latency (ms).
type Sample struct {
	Op      string
	Dtype   string  // GEMM dtype
	Attn    AttnKey // attention tables
	Key     []float64
	Latency float64
}

// Time answers a sample's shape from the set.
func (s *Set) Time(smp Sample) (float64, bool) {
	k := smp.Key
	switch smp.Op {
	case OpGEMM:
		return s.GEMMTime(smp.Dtype, k[0], k[1], k[2])
	case OpContextAttention:
		return s.ContextAttentionTime(smp.Attn, k[0], k[1], k[2], k[3])
	case OpGenerationAttention:
		return s.GenerationAttentionTime(smp.Attn, k[0], k[1], k[2], k[3])
	case OpContextMLA:
		return s.ContextMLATime(smp.Attn, k[0], k[1], k[2])
	case OpGenerationMLA:
		return s.GenerationMLATime(smp.Attn.KVDtype, k[0], k[1], k[2])
	case OpGDN:
		return s.GDNTime(smp.Dtype, k[0], k[1], k[2])
	case OpAllReduce:
		return s.AllReduceTime(k[0], k[1])
	case OpMoE:
		return s.MoETime(catalog.Precision(smp.Dtype), k[0], k[1], k[2], k[3])
	}
	return 0, false
}

// EveryNth holds out about one measurement in n, picked by a hash of its
// operation and keys, so the choice is the same on every run.
func EveryNth(n int) func(Sample) bool {
	return func(smp Sample) bool {
		h := fnv.New64a()
		h.Write([]byte(smp.Op + "/" + smp.Dtype + "/" + smp.Attn.AttnDtype + "/" + smp.Attn.KVDtype))
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(smp.Attn.HeadDim)<<32|uint64(smp.Attn.Window))
		h.Write(b[:])
		for _, k := range smp.Key {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(k))
			h.Write(b[:])
		}
		return mix(h.Sum64())%uint64(n) == 0
	}
}

// Accuracy is how well a set answers held-out measurements of one kind.
type Accuracy struct {
	Op     string  `json:"op"`
	N      int     `json:"n"`                    // held-out rows answered
	Missed int     `json:"missed"`               // rows the set could not answer
	MAPE   float64 `json:"mape_pct"`             // mean absolute percentage error, %
	Median float64 `json:"median_pct,omitempty"` // median absolute percentage error, % (not pooled)
	P90    float64 `json:"p90_pct,omitempty"`    // 90th percentile absolute percentage error, % (not pooled)
	Bias   float64 `json:"bias_pct"`             // mean signed error, % (negative: optimistic)
}

// Evaluate answers held-out samples from the set, per operation kind.
func Evaluate(s *Set, held []Sample) []Accuracy {
	type acc struct {
		errs, signed []float64
		missed       int
	}
	by := map[string]*acc{}
	for _, smp := range held {
		a := by[smp.Op]
		if a == nil {
			a = &acc{}
			by[smp.Op] = a
		}
		got, ok := s.Time(smp)
		if !ok {
			a.missed++
			continue
		}
		e := (got - smp.Latency) / smp.Latency * 100
		a.errs = append(a.errs, math.Abs(e))
		a.signed = append(a.signed, e)
	}
	var out []Accuracy
	for op, a := range by {
		r := Accuracy{Op: op, N: len(a.errs), Missed: a.missed, MAPE: mean(a.errs), Bias: mean(a.signed)}
		sort.Float64s(a.errs)
		if len(a.errs) > 0 {
			r.Median = a.errs[len(a.errs)/2]
			r.P90 = a.errs[len(a.errs)*9/10]
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// mix is splitmix64's finaliser: FNV's low bits repeat over keys that are
// powers of two, which would hold out none of a table or all of it.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Pool combines accuracies of one operation kind from several tables,
// weighting each by its rows (medians and percentiles are not pooled).
func Pool(op string, accs []Accuracy) Accuracy {
	out := Accuracy{Op: op}
	for _, a := range accs {
		if a.Op != op {
			continue
		}
		out.MAPE += a.MAPE * float64(a.N)
		out.Bias += a.Bias * float64(a.N)
		out.N += a.N
		out.Missed += a.Missed
	}
	if out.N > 0 {
		out.MAPE /= float64(out.N)
		out.Bias /= float64(out.N)
	}
	return out
}
