package calibrate

import (
	"sort"
	"strings"
)

// Reasons given for rows that repeat a measurement.
const (
	reasonRepeat     = "repeats a measurement listed earlier"
	reasonRepeatConf = "repeats a measurement listed elsewhere with a different configuration"
)

// minRepeatDigits is how many significant digits TTFT and TPOT must both
// carry before equal values are taken for one measurement: rounded values
// can coincide between runs, full-precision ones cannot.
const minRepeatDigits = 6

// repeatColumns describe a run's configuration. Two records of one
// measurement that differ in them disagree about what was run.
var repeatColumns = []string{"precision", "gemm_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size",
	"moe_tp_size", "moe_ep_size", "prefill_num_workers", "prefill_tp_size", "prefill_pp_size", "prefill_attention_dp_size",
	"prefill_moe_ep_size", "decode_num_workers", "decode_tp_size", "decode_pp_size", "decode_attention_dp_size", "decode_moe_ep_size"}

// repeats finds rows that record a measurement another row records too:
// the same system, backend, mode and ISL/OSL with TTFT and TPOT equal to
// every digit. Campaigns re-export earlier runs, sometimes under another
// name of the same architecture (DeepSeek-R1 and -V3); counted twice, a run
// weighs double in the fit and sits on both sides of a held-out split.
// One record of each measurement is kept (see better; on a tie, the
// first). The others map, by row index, to the reason and the kept row's ID.
func repeats(t *csvTable) map[int]Skipped {
	groups := map[string][]int{}
	var order []string
	for i, row := range t.rows {
		ttft, tpot := t.get(row, "silicon_ttft_ms"), t.get(row, "silicon_tpot_ms")
		if sigDigits(ttft) < minRepeatDigits || sigDigits(tpot) < minRepeatDigits {
			continue
		}
		k := strings.Join([]string{t.get(row, "system"), t.get(row, "backend"), t.get(row, "mode"),
			t.get(row, "isl"), t.get(row, "osl"), ttft, tpot}, "\x00")
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := map[int]Skipped{}
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		keep, same := g[0], true
		for _, i := range g[1:] {
			if t.config(t.rows[i]) != t.config(t.rows[keep]) {
				same = false
			}
			if t.better(t.rows[i], t.rows[keep]) {
				keep = i
			}
		}
		reason := reasonRepeat
		if !same {
			reason = reasonRepeatConf
		}
		for _, i := range g {
			if i != keep {
				out[i] = Skipped{Line: i + 2, ID: t.get(t.rows[i], "id"), Reason: reason, Of: t.get(t.rows[keep], "id")}
			}
		}
	}
	return out
}

func (t *csvTable) config(row []string) string {
	var b strings.Builder
	for _, c := range repeatColumns {
		b.WriteString(t.get(row, c))
		b.WriteByte(0)
	}
	return b.String()
}

// better says whether row a is a more credible record of a measurement
// than b: the more worker counts given (the detailed record), then the
// fewer GPUs a worker needs. The conflicting re-exports seen record
// tp x ep as tp (or dp) and so multiply the GPU count; none divides it.
func (t *csvTable) better(a, b []string) bool {
	if wa, wb := t.workersStated(a), t.workersStated(b); wa != wb {
		return wa > wb
	}
	return t.workerGPUs(a) < t.workerGPUs(b)
}

// workerGPUs is the GPUs one worker (one of each pool, disaggregated)
// takes as recorded; unreadable sizes count as one.
func (t *csvTable) workerGPUs(row []string) int {
	size := func(col string) int {
		v, err := t.int(row, col)
		if err != nil {
			return 1
		}
		return min(v, 1<<16) // no overflow in the product
	}
	group := func(prefix string) int {
		return groupGPUs(size(prefix+"tp_size"), size(prefix+"pp_size"), size(prefix+"attention_dp_size"))
	}
	if t.get(row, "mode") == "disagg" {
		return group("prefill_") + group("decode_")
	}
	return group("")
}

// workersStated counts the worker counts a disaggregated record gives.
func (t *csvTable) workersStated(row []string) int {
	n := 0
	for _, c := range []string{"prefill_num_workers", "decode_num_workers"} {
		if t.get(row, c) != "" {
			n++
		}
	}
	return n
}

// sigDigits counts the significant digits of a decimal number as written.
func sigDigits(s string) int {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0") // written padding, not precision
	}
	n, lead := 0, true
	for _, r := range s {
		switch {
		case r == '0' && lead:
		case r >= '0' && r <= '9':
			lead = false
			n++
		}
	}
	return n
}

// ReasonCount is how many rows were skipped for one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Rows   int    `json:"rows"`
}

// SkipReasons counts skipped rows by reason, most frequent first.
func SkipReasons(skipped []Skipped) []ReasonCount {
	n := map[string]int{}
	for _, s := range skipped {
		n[s.Reason]++
	}
	out := make([]ReasonCount, 0, len(n))
	for r, c := range n {
		out = append(out, ReasonCount{Reason: r, Rows: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rows != out[j].Rows {
			return out[i].Rows > out[j].Rows
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}
