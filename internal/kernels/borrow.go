package kernels

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// BorrowAccuracy is how well one measured GPU's tables answer another's
// rows of one operation kind: scaled as the model scales them for a GPU
// without tables (perf.ScaledKernels), and as they stand.
type BorrowAccuracy struct {
	To       string  `json:"to"`
	From     string  `json:"from"`
	Backend  string  `json:"backend"`
	Op       string  `json:"op"`
	N        int     `json:"n"`
	MAPE     float64 `json:"mape_pct"`
	Unscaled float64 `json:"unscaled_mape_pct"`
}

// BorrowReport is every pair of measured GPUs of one architecture and
// major compute capability, each answering the other's held-out rows,
// and the kinds pooled over the pairs.
type BorrowReport struct {
	HoldOneIn int              `json:"holdOneIn"`
	Pairs     []BorrowAccuracy `json:"pairs"`
	Pooled    []BorrowAccuracy `json:"pooled"`
}

// borrowedOps are the kinds the model prices from tables, and so borrows.
var borrowedOps = []string{OpGEMM, OpContextAttention, OpGenerationAttention, OpGenerationMLA}

// EvaluateBorrowed tries the tables a GPU without its own would borrow on
// GPUs that have them: about one row in n of each table of one GPU (the
// rows EveryNth picks) is answered from another GPU's tables under the
// same backend. progress, if set, is told of each pair before it is read.
func (l *Library) EvaluateBorrowed(n int, progress func(i, total int, to, from, backend string)) (*BorrowReport, error) {
	if n < 2 {
		return nil, fmt.Errorf("hold one row in %d: want 2 or more (one in 10 is usual)", n)
	}
	type pair struct {
		to, from *catalog.GPU
		backend  perf.Backend
	}
	var pairs []pair
	names := slices.Sorted(maps.Keys(l.measured))
	for _, a := range names {
		for _, b := range names {
			ga, gb := l.measured[a], l.measured[b]
			if a == b || !perf.SameKernels(ga, gb) {
				continue
			}
			for _, be := range perf.Backends {
				if l.has(a, be) && l.has(b, be) {
					pairs = append(pairs, pair{ga, gb, be})
				}
			}
		}
	}
	// Sums of absolute percentage errors, scaled and unscaled.
	type errs struct {
		n           int
		scaled, raw float64
	}
	accuracy := func(e *errs, to, from, backend, op string) BorrowAccuracy {
		return BorrowAccuracy{To: to, From: from, Backend: backend, Op: op, N: e.n, MAPE: e.scaled / float64(e.n), Unscaled: e.raw / float64(e.n)}
	}
	rep := &BorrowReport{HoldOneIn: n}
	pooled := map[string]*errs{}
	for i, p := range pairs {
		if progress != nil {
			progress(i+1, len(pairs), p.to.Name, p.from.Name, string(p.backend))
		}
		_, held, err := LoadHoldingOut(l.dir, l.systemOf[p.to.Name], string(p.backend), EveryNth(n))
		if err != nil {
			return nil, err
		}
		src, err := l.Set(p.from.Name, p.backend)
		if err != nil {
			return nil, err
		}
		raw := perf.Kernels(seconds{src})
		scaled := perf.ScaledKernels(raw, catalog.WholeDevice(p.from), catalog.WholeDevice(p.to))
		by := map[string]*errs{}
		for _, smp := range held {
			s, ok1 := borrowedTime(scaled, smp)
			r, ok2 := borrowedTime(raw, smp)
			if !ok1 || !ok2 {
				continue
			}
			for _, m := range []map[string]*errs{by, pooled} {
				e := m[smp.Op]
				if e == nil {
					e = &errs{}
					m[smp.Op] = e
				}
				e.n++
				e.scaled += 100 * math.Abs(s/smp.Latency-1)
				e.raw += 100 * math.Abs(r/smp.Latency-1)
			}
		}
		for _, op := range borrowedOps {
			if e := by[op]; e != nil {
				rep.Pairs = append(rep.Pairs, accuracy(e, p.to.Name, p.from.Name, string(p.backend), op))
			}
		}
	}
	for _, op := range borrowedOps {
		if e := pooled[op]; e != nil {
			rep.Pooled = append(rep.Pooled, accuracy(e, "all", "all", "all", op))
		}
	}
	return rep, nil
}

// borrowedTime answers a sample from tables through k, the performance
// model's view of them (scaled or not), in milliseconds; ok is false for
// kinds the model does not price from tables.
func borrowedTime(k perf.Kernels, smp Sample) (ms float64, ok bool) {
	x := smp.Key
	var secs float64
	switch smp.Op {
	case OpGEMM:
		secs, ok = k.GEMM(smp.Dtype, x[0], x[1], x[2])
	case OpContextAttention:
		secs, ok = k.ContextAttention(smp.Attn.AttnDtype, smp.Attn.KVDtype, smp.Attn.HeadDim, smp.Attn.Window, x[0], x[1], x[2], x[3])
	case OpGenerationAttention:
		secs, ok = k.GenerationAttention(smp.Attn.KVDtype, smp.Attn.HeadDim, smp.Attn.Window, x[0], x[1], x[2], x[3])
	case OpGenerationMLA:
		secs, ok = k.GenerationMLA(smp.Attn.KVDtype, x[0], x[1], x[2])
	}
	return secs * 1e3, ok
}
