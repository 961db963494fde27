package calibrate

import (
	"math"
	"sort"
	"strconv"
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

// minCopyDigits is how many significant digits a rounded record's TTFT and
// TPOT must carry together before it is taken for a copy of a full record
// whose values round to its own.
const minCopyDigits = 7

// maxCopyDecimals bounds the decimals a rounded copy is compared at; full
// records carry more.
const maxCopyDecimals = 5

// repeatColumns describe a run's configuration. Two records of one
// measurement that differ in them disagree about what was run.
var repeatColumns = []string{"precision", "gemm_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size",
	"moe_tp_size", "moe_ep_size", "prefill_num_workers", "prefill_tp_size", "prefill_pp_size", "prefill_attention_dp_size",
	"prefill_moe_ep_size", "decode_num_workers", "decode_tp_size", "decode_pp_size", "decode_attention_dp_size", "decode_moe_ep_size"}

// repeats finds rows that record a measurement another row records too.
// Campaigns re-export earlier runs, sometimes under another name of the
// same architecture (DeepSeek-R1 and -V3), with the last digit changed by
// a float round trip, or rounded to two decimals; counted twice, a run
// weighs double in the fit and sits on both sides of a held-out split.
//
// Full records (both values to minRepeatDigits significant digits) of the
// same system, backend, mode and ISL/OSL are one measurement when TTFT and
// TPOT agree to that many digits. A rounded record (minCopyDigits or more
// in the two values together) is a copy of a full record that rounds to
// both its values; two rounded records alone are never matched. Records of
// one measurement may disagree on the configuration. One is kept (see
// better; on a tie a full record, then the first listed); the others map,
// by row index, to the reason and the kept row's ID.
func repeats(t *csvTable) map[int]Skipped {
	base := func(row []string) string {
		return strings.Join([]string{t.get(row, "system"), t.get(row, "backend"), t.get(row, "mode"),
			t.get(row, "isl"), t.get(row, "osl")}, "\x00")
	}
	type value struct{ ttft, tpot float64 }
	values := make([]*value, len(t.rows))
	class := map[string][]int{} // a measurement's full records, then its copies
	var order []string
	copies := map[[2]int][]int{} // rounded records by the decimals they are written to
	for i, row := range t.rows {
		ttft, tpot := t.get(row, "silicon_ttft_ms"), t.get(row, "silicon_tpot_ms")
		a, errA := strconv.ParseFloat(ttft, 64)
		b, errB := strconv.ParseFloat(tpot, 64)
		if errA != nil || errB != nil || !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			continue // the loader reports the values
		}
		values[i] = &value{a, b}
		da, db := sigDigits(ttft), sigDigits(tpot)
		if da < minRepeatDigits || db < minRepeatDigits {
			d := [2]int{decimals(ttft), decimals(tpot)}
			if da+db >= minCopyDigits && d[0] <= maxCopyDecimals && d[1] <= maxCopyDecimals && !strings.ContainsAny(ttft+tpot, "eE") {
				copies[d] = append(copies[d], i)
			}
			continue
		}
		k := base(row) + "\x00" + strconv.FormatFloat(a, 'g', minRepeatDigits, 64) + "\x00" + strconv.FormatFloat(b, 'g', minRepeatDigits, 64)
		if _, ok := class[k]; !ok {
			order = append(order, k)
		}
		class[k] = append(class[k], i)
	}
	// Each copy joins the measurement whose full records round to it,
	// looked up at the decimals it is written to.
	rounded := map[int]bool{}
	for _, d := range sortedPrecisions(copies) {
		at := func(i int) string {
			return base(t.rows[i]) + "\x00" + strconv.FormatFloat(values[i].ttft, 'f', d[0], 64) + "\x00" + strconv.FormatFloat(values[i].tpot, 'f', d[1], 64)
		}
		index := map[string]string{}
		for _, k := range order {
			for _, i := range class[k] {
				if key := at(i); index[key] == "" {
					index[key] = k
				}
			}
		}
		for _, i := range copies[d] {
			if k, ok := index[at(i)]; ok {
				class[k] = append(class[k], i)
				rounded[i] = true
			}
		}
	}
	out := map[int]Skipped{}
	for _, k := range order {
		g := class[k]
		if len(g) < 2 {
			continue
		}
		keep, same := g[0], true
		for _, i := range g[1:] {
			if t.config(t.rows[i]) != t.config(t.rows[keep]) {
				same = false
			}
			if t.better(t.rows[i], t.rows[keep]) || (!t.better(t.rows[keep], t.rows[i]) && rounded[keep] && !rounded[i]) {
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

// decimals counts the digits written after the decimal point.
func decimals(s string) int {
	_, frac, ok := strings.Cut(s, ".")
	if !ok {
		return 0
	}
	return len(frac)
}

// sortedPrecisions lists the map's precisions in order, so that the
// lookups run the same way every time.
func sortedPrecisions(m map[[2]int][]int) [][2]int {
	out := make([][2]int, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
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
