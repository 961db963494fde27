package kernels

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// AttnRow is one measured full-attention call per GPU: prefill over Batch
// prompts of Len tokens, or one decode step of Batch sequences over Len
// cached tokens.
type AttnRow struct {
	System, Backend string
	Decode          bool
	Heads, KVHeads  float64
	HeadDim         float64
	Batch, Len      float64
	KVBytes         float64 // bytes of one cached element
	Peak, BW        float64 // the catalog GPU's dense BF16 peak (FLOP/s) and bandwidth (B/s)
	Seconds         float64
}

// flops is the row's attention work: four multiply-adds per head
// dimension and query-key pair, causal in prefill.
func (r AttnRow) flops() float64 {
	pairs := r.Len
	if !r.Decode {
		pairs = r.Len * r.Len / 2
	}
	return 4 * r.Batch * r.Heads * r.HeadDim * pairs
}

// kvBytes is the cache the row reads (decode) or writes (prefill).
func (r AttnRow) kvBytes() float64 {
	return r.Batch * r.Len * 2 * r.KVHeads * r.HeadDim * r.KVBytes
}

// AttnSummary is what the performance model prices an architecture's
// attention with (perf.FamilyParams: attentionCompute,
// attentionPrefillBandwidth, attentionCallUs; attentionBandwidth,
// decodeAttentionCallUs, decodeAttentionSeqUs), fitted to the measured
// tables.
type AttnSummary struct {
	Compute          float64 `json:"compute"`           // fraction of BF16 peak in prefill attention
	PrefillBandwidth float64 `json:"prefill_bandwidth"` // fraction of bandwidth prefill moves queries, outputs and cache at
	CallUs           float64 `json:"call_us"`
	Bandwidth        float64 `json:"bandwidth"` // fraction of bandwidth decode streams the cache at
	DecodeCallUs     float64 `json:"decode_call_us"`
	DecodeSeqUs      float64 `json:"decode_seq_us"` // per sequence of a decode call
}

// Seconds prices a row the way perf.Worker prices one layer's attention:
// prefill on the smoothed roofline (queries and outputs counted when a
// prefill bandwidth is given), decode per cached token and per sequence,
// plus one call.
func (a AttnSummary) Seconds(r AttnRow) float64 {
	peak := r.Peak * a.Compute
	if r.Decode {
		perTok := perf.DecodeAttentionPerToken(2*r.KVHeads*r.HeadDim*r.KVBytes, 4*r.Heads*r.HeadDim, peak, r.BW*a.Bandwidth)
		return r.Batch*(r.Len*perTok+a.DecodeSeqUs*1e-6) + a.DecodeCallUs*1e-6
	}
	bytes, bw := r.kvBytes(), r.BW*a.Bandwidth
	if a.PrefillBandwidth > 0 {
		bytes += r.Batch * r.Len * 2 * r.Heads * r.HeadDim * 2
		bw = r.BW * a.PrefillBandwidth
	}
	return perf.AttentionRoofline(r.flops(), bytes, peak, bw) + a.CallUs*1e-6
}

// AttnRows returns a set's full-attention rows that the model prices:
// prefill computed in BF16 (the model's attention peak) and decode whose
// table streams the cache within perf's plausible bounds of the GPU's
// bandwidth. A decode table (one dtype, head size and head counts) is
// judged whole, at its largest batch and context, as perf judges it.
func AttnRows(s *Set, gpu *catalog.GPU) []AttnRow {
	peak, bw := gpu.PeakTFLOPS(catalog.BF16)*1e12, gpu.MemoryBandwidthGBps*1e9
	var out []AttnRow
	for _, k := range sortedAttnKeys(s.ContextAttention) {
		if k.Window != 0 || k.AttnDtype != "bfloat16" {
			continue
		}
		s.ContextAttention[k].leaves(func(key []float64, ms float64, _ int) {
			out = append(out, attnRow(s, gpu, k, false, key[0], key[1], key[3], key[2], ms, peak, bw))
		})
	}
	for _, k := range sortedAttnKeys(s.GenerationAttention) {
		if k.Window != 0 {
			continue
		}
		byHeads := map[[2]float64][]AttnRow{}
		var order [][2]float64
		s.GenerationAttention[k].leaves(func(key []float64, ms float64, _ int) {
			r := attnRow(s, gpu, k, true, key[0], key[1], key[2], key[3], ms, peak, bw)
			h := [2]float64{r.Heads, r.KVHeads}
			if byHeads[h] == nil {
				order = append(order, h)
			}
			byHeads[h] = append(byHeads[h], r)
		})
		for _, h := range order {
			rows := byHeads[h]
			big := rows[0]
			for _, r := range rows {
				if r.Batch*r.Len > big.Batch*big.Len {
					big = r
				}
			}
			perTokBytes := 2 * big.KVHeads * big.HeadDim * big.KVBytes
			if perf.DecodePlausible(big.Seconds/(big.Batch*big.Len), perTokBytes, bw) {
				out = append(out, rows...)
			}
		}
	}
	return out
}

func attnRow(s *Set, gpu *catalog.GPU, k AttnKey, decode bool, heads, kvHeads, batch, length, ms, peak, bw float64) AttnRow {
	if kvHeads == 0 {
		kvHeads = heads // the tables keep MHA under kv heads 0
	}
	return AttnRow{System: s.System, Backend: s.Backend, Decode: decode, Heads: heads, KVHeads: kvHeads, HeadDim: float64(k.HeadDim),
		Batch: batch, Len: length, KVBytes: kvBytes(k.KVDtype), Peak: peak, BW: bw, Seconds: ms / 1e3}
}

func sortedAttnKeys(m map[AttnKey]*Grid) []AttnKey {
	keys := make([]AttnKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.AttnDtype != b.AttnDtype {
			return a.AttnDtype < b.AttnDtype
		}
		if a.KVDtype != b.KVDtype {
			return a.KVDtype < b.KVDtype
		}
		if a.HeadDim != b.HeadDim {
			return a.HeadDim < b.HeadDim
		}
		return a.Window < b.Window
	})
	return keys
}

// MinAttnRows is the fewest prefill and the fewest decode rows a family's
// summary is fitted on.
const MinAttnRows = 40

// splitPhases separates prefill rows from decode rows.
func splitPhases(rows []AttnRow) (prefill, decode []AttnRow) {
	for _, r := range rows {
		if r.Decode {
			decode = append(decode, r)
		} else {
			prefill = append(prefill, r)
		}
	}
	return prefill, decode
}

// thin keeps at most n rows, evenly spaced, so every shape class stays.
func thin[R any](rows []R, n int) []R {
	if len(rows) <= n {
		return rows
	}
	step := float64(len(rows)) / float64(n)
	out := make([]R, 0, n)
	for i := 0.0; int(i) < len(rows); i += step {
		out = append(out, rows[int(i)])
	}
	return out
}

// FitAttention fits a family's summary: the prefill efficiency, bandwidth
// and call cost on its prefill rows, and the decode bandwidth, call and
// per-sequence costs on its decode rows (at the prefill's efficiency,
// which binds only multi-head caches), each by Nelder-Mead on the mean
// squared log error.
func FitAttention(rows []AttnRow) (AttnSummary, error) {
	prefill, decode := splitPhases(rows)
	if len(prefill) < 16 || len(decode) < 16 {
		return AttnSummary{}, fmt.Errorf("attention fit: %d prefill and %d decode rows; need at least 16 of each", len(prefill), len(decode))
	}
	prefill, decode = thin(prefill, maxFitRows), thin(decode, maxFitRows)
	msle := func(a AttnSummary, rows []AttnRow) float64 {
		var s float64
		for _, r := range rows {
			d := math.Log(a.Seconds(r) / r.Seconds)
			s += d * d
		}
		return s / float64(len(rows))
	}
	// Bounds above one leave the simplex a slope back down; perf takes at most one.
	bound := func(x, hi float64) float64 { return math.Min(hi, math.Exp(x)) }
	var sum AttnSummary
	setPrefill := func(a *AttnSummary, x []float64) {
		a.Compute, a.CallUs, a.PrefillBandwidth = bound(x[0], 1.5), bound(x[1], 1000), bound(x[2], 1.5)
	}
	setDecode := func(a *AttnSummary, x []float64) {
		a.Bandwidth, a.DecodeCallUs, a.DecodeSeqUs = bound(x[0], 1.5), bound(x[1], 1000), bound(x[2], 1000)
	}
	x, err := minimizeLog(func(x []float64) float64 {
		a := sum
		setPrefill(&a, x)
		return msle(a, prefill)
	}, []float64{math.Log(0.5), math.Log(10), math.Log(0.3)})
	if err != nil {
		return AttnSummary{}, fmt.Errorf("attention fit, prefill: %w", err)
	}
	setPrefill(&sum, x)
	if x, err = minimizeLog(func(x []float64) float64 {
		a := sum
		setDecode(&a, x)
		return msle(a, decode)
	}, []float64{math.Log(0.7), math.Log(10), math.Log(0.05)}); err != nil {
		return AttnSummary{}, fmt.Errorf("attention fit, decode: %w", err)
	}
	setDecode(&sum, x)
	return sum, nil
}

// AttnScore scores prefill and decode rows apart: they are different ops.
type AttnScore struct {
	Prefill Score `json:"prefill"`
	Decode  Score `json:"decode"`
}

// ScoreAttention predicts rows with a.
func ScoreAttention(a AttnSummary, rows []AttnRow) AttnScore {
	prefill, decode := splitPhases(rows)
	one := func(rows []AttnRow) Score {
		pred := make([]float64, len(rows))
		meas := make([]float64, len(rows))
		for i, r := range rows {
			pred[i], meas[i] = a.Seconds(r), r.Seconds
		}
		return score(pred, meas)
	}
	return AttnScore{Prefill: one(prefill), Decode: one(decode)}
}

// holdAttention splits rows: about one in n is held out, by a hash of its
// system, backend, phase and shape.
func holdAttention(rows []AttnRow, n int) (fit, held []AttnRow) {
	for _, r := range rows {
		label := r.System + "/" + r.Backend
		if r.Decode {
			label += "/decode"
		}
		if oneIn(n, label, r.Heads, r.KVHeads, r.HeadDim, r.Batch, r.Len, r.KVBytes) {
			held = append(held, r)
		} else {
			fit = append(fit, r)
		}
	}
	return fit, held
}

// AttnResult is one family's attention summary with its validation.
type AttnResult struct {
	Family  string      `json:"family"`
	Systems []string    `json:"systems"`
	Summary AttnSummary `json:"summary"`
	Prefill int         `json:"prefill_rows"`
	Decode  int         `json:"decode_rows"`
	// HeldOut scores one row in ten predicted by a fit on the other nine;
	// Embedded scores the same rows at the parameters in use.
	HeldOut  AttnScore  `json:"held_out"`
	Embedded *AttnScore `json:"embedded,omitempty"`
	// BySystem scores each system's rows predicted by a fit on the
	// family's other systems.
	BySystem map[string]AttnScore `json:"by_system,omitempty"`
}

// ValidateAttention fits a family's summary on all its rows and scores it
// held out by row and by system; current, when given, is scored on the
// same held-out rows for comparison.
func ValidateAttention(family string, rows []AttnRow, current *AttnSummary) (AttnResult, error) {
	res := AttnResult{Family: family}
	p, d := splitPhases(rows)
	res.Prefill, res.Decode = len(p), len(d)
	system := func(r AttnRow) string { return r.System }
	res.Systems = systemsOf(rows, system)
	fit, held := holdAttention(rows, 10)
	a, err := FitAttention(fit)
	if err != nil {
		return res, fmt.Errorf("%s: %w", family, err)
	}
	res.HeldOut = ScoreAttention(a, held)
	if current != nil && current.Compute > 0 && current.Bandwidth > 0 {
		sc := ScoreAttention(*current, held)
		res.Embedded = &sc
	}
	if res.BySystem, err = scoreBySystem(res.Systems, rows, system, FitAttention, ScoreAttention); err != nil {
		return res, fmt.Errorf("%s %w", family, err)
	}
	if res.Summary, err = FitAttention(rows); err != nil {
		return res, fmt.Errorf("%s: %w", family, err)
	}
	return res, nil
}
