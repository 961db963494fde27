// Package calibrate fits the performance model's efficiencies to measured
// serving runs and reports how well the model predicts them.
package calibrate

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// Case is one measured configuration: the query that reproduces it and
// what was measured. Zero measurements are absent.
type Case struct {
	ID      string
	Source  string // "silicon" or "max-throughput"
	System  string
	Backend string
	Model   string
	Mode    string
	// Campaign is the measurement campaign the row came from (its source
	// file or dump), which fixes the benchmark client: a cross-validation unit.
	Campaign string
	Dense    bool
	Query    estimate.Query
	// TTFTms and TPOTms are measured latencies; OutputTPS a measured throughput (tokens/s per worker group).
	TTFTms, TPOTms, OutputTPS float64
	// Harness is the benchmark client the row declares (optional column
	// "harness"); empty rows are predicted under the calibration's default.
	Harness serving.Harness
}

// Group keys a case for per-(system, backend, model, mode) reporting.
func (c Case) Group() string {
	return c.System + "/" + c.Backend + "/" + c.Model + "/" + c.Mode
}

// Skipped explains a row that cannot be turned into a case.
type Skipped struct {
	Line   int
	ID     string
	Reason string
	// Of is the row used instead, for a row that repeats a measurement.
	Of string
}

type csvTable struct {
	path string
	cols map[string]int
	rows [][]string
	// domain is a system's GPUs in one NVLink domain (0: not known); set
	// where a catalog is at hand, it lets readAggLayout tell an exporter's
	// product from a real multi-node layout.
	domain func(system string) int
}

func readCSV(path string, required ...string) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open calibration data: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: read header: %w", path, err)
	}
	t := &csvTable{path: path, cols: map[string]int{}}
	for i, h := range head {
		// A spreadsheet's UTF-8 export starts with a byte-order mark.
		t.cols[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			return nil, fmt.Errorf("%s: missing column %q", path, c)
		}
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		t.rows = append(t.rows, rec)
	}
	return t, nil
}

func (t *csvTable) get(row []string, col string) string {
	i, ok := t.cols[col]
	if !ok || i >= len(row) {
		return ""
	}
	return strings.TrimSpace(row[i])
}

func (t *csvTable) num(row []string, col string) (float64, error) {
	s := t.get(row, col)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("column %s: %q is not a finite number", col, s)
	}
	return v, nil
}

// int reads a whole number within what a measured run can hold.
func (t *csvTable) int(row []string, col string) (int, error) {
	v, err := t.num(row, col)
	if err == nil && (v != math.Trunc(v) || math.Abs(v) > 1e9) {
		return 0, fmt.Errorf("column %s: %g is not a whole number up to 1e9", col, v)
	}
	return int(v), err
}

var concurrencyRe = regexp.MustCompile(`(?:silicon_concurrency=|_c)(\d+)`)

// LoadSilicon reads measured serving runs (columns as in
// calibration/silicon_calibration.csv). Rows whose configuration the model
// cannot express are returned as skipped with the reason, never dropped silently.
func LoadSilicon(path string, resolve func(model string) (dense bool, ok bool)) ([]Case, []Skipped, error) {
	t, err := readSilicon(path)
	if err != nil {
		return nil, nil, err
	}
	return siliconCases(t, resolve)
}

func readSilicon(path string) (*csvTable, error) {
	return readCSV(path, "id", "backend", "model_path", "system", "mode", "isl", "osl", "silicon_ttft_ms", "silicon_tpot_ms")
}

func siliconCases(t *csvTable, resolve func(model string) (dense bool, ok bool)) ([]Case, []Skipped, error) {
	var cases []Case
	var skipped []Skipped
	reps := repeats(t)
	for i, row := range t.rows {
		line := i + 2
		if s, ok := reps[i]; ok {
			skipped = append(skipped, s)
			continue
		}
		c, reason, err := siliconCase(t, row, resolve)
		if err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", t.path, line, err)
		}
		if reason != "" {
			skipped = append(skipped, Skipped{Line: line, ID: t.get(row, "id"), Reason: reason})
			continue
		}
		cases = append(cases, c)
	}
	return cases, skipped, nil
}

func siliconCase(t *csvTable, row []string, resolve func(string) (bool, bool)) (Case, string, error) {
	c := Case{ID: t.get(row, "id"), Source: "silicon", System: t.get(row, "system"), Backend: t.get(row, "backend"),
		Model: t.get(row, "model_path"), Mode: t.get(row, "mode"), Campaign: campaign(t.get(row, "silicon_data_source"))}
	dense, ok := resolve(c.Model)
	if !ok {
		return c, "model not in catalog", nil
	}
	c.Dense = dense
	if h := t.get(row, "harness"); h != "" {
		var err error
		if c.Harness, err = serving.ParseHarness(h); err != nil {
			return c, "", fmt.Errorf("column harness: %w", err)
		}
	}
	prec := t.get(row, "precision")
	if prec == "" {
		prec = t.get(row, "gemm_quant_mode")
	}
	if prec == "" {
		prec = "bf16"
	}
	// int4 rows (Kimi-K2.5's native int4 experts) are weight-only 4-bit:
	// the estimator's w4a16, as `estimate --precision int4` reads it.
	var err error
	q := estimate.Query{Model: c.Model, GPU: c.System, Backend: c.Backend, Precision: prec, Mode: c.Mode}
	if prec != "bf16" {
		// These benchmark runs quantise the KV cache with the weights.
		q.KVPrecision = "fp8"
	}
	if q.ISL, err = t.int(row, "isl"); err != nil {
		return c, "", err
	}
	if q.OSL, err = t.int(row, "osl"); err != nil {
		return c, "", err
	}
	if c.TTFTms, err = t.num(row, "silicon_ttft_ms"); err != nil {
		return c, "", err
	}
	if c.TPOTms, err = t.num(row, "silicon_tpot_ms"); err != nil {
		return c, "", err
	}
	geti := func(col string) int {
		v, e := t.int(row, col)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	switch c.Mode {
	case "agg":
		l, reason, e := readAggLayout(t, row)
		if e != nil || reason != "" {
			return c, reason, e
		}
		q.Concurrency, q.TP, q.PP = l.Concurrency, l.TP, l.PP
		if l.DP > 1 {
			q.DP = l.DP
		}
		if l.EP > 1 && !dense {
			q.EP = l.EP
		}
	case "disagg":
		m := concurrencyRe.FindStringSubmatch(t.get(row, "silicon_data_source") + " " + c.ID)
		if m == nil {
			return c, "disaggregated row without a benchmark concurrency", nil
		}
		q.Concurrency, _ = strconv.Atoi(m[1])
		q.PrefillTP, q.PrefillPP, q.PrefillWorkers = geti("prefill_tp_size"), geti("prefill_pp_size"), geti("prefill_num_workers")
		q.DecodeTP, q.DecodePP, q.DecodeWorkers = geti("decode_tp_size"), geti("decode_pp_size"), geti("decode_num_workers")
		// A row without worker counts is estimated as a user's query without
		// them is: with the pools sized to its concurrency (serving.PoolSizes).
		q.PrefillDP, q.DecodeDP = geti("prefill_attention_dp_size"), geti("decode_attention_dp_size")
		if !dense {
			q.PrefillEP, q.DecodeEP = geti("prefill_moe_ep_size"), geti("decode_moe_ep_size")
		}
	default:
		return c, "", fmt.Errorf("column mode: %q is not agg or disagg", c.Mode)
	}
	if err != nil {
		return c, "", err
	}
	if q.Concurrency < 1 || c.TTFTms <= 0 || c.TPOTms <= 0 {
		return c, "missing concurrency or measurement", nil
	}
	c.Query = q
	return c, "", nil
}

// LoadMaxThroughput reads TensorRT-LLM max-throughput tables (columns as in
// calibration/trtllm_max_throughput.csv). The engine then runs at the
// largest batch its KV cache admits.
func LoadMaxThroughput(path string, resolve func(model string) (bool, bool), knownGPU func(string) bool) ([]Case, []Skipped, error) {
	t, err := readCSV(path, "gpu", "model", "precision", "tp", "isl", "osl", "metric", "value")
	if err != nil {
		return nil, nil, err
	}
	var cases []Case
	var skipped []Skipped
	for i, row := range t.rows {
		line := i + 2
		c := Case{Source: "max-throughput", System: t.get(row, "gpu"), Backend: "trtllm", Model: t.get(row, "model"), Mode: "max-throughput",
			Campaign: "trtllm-max-throughput"}
		c.ID = fmt.Sprintf("%s line %d", path, line)
		if t.get(row, "metric") != "output_throughput_total" {
			skipped = append(skipped, Skipped{Line: line, ID: c.ID, Reason: "metric is not output_throughput_total"})
			continue
		}
		dense, ok := resolve(c.Model)
		if !ok {
			skipped = append(skipped, Skipped{Line: line, ID: c.ID, Reason: "model not in catalog"})
			continue
		}
		if !knownGPU(c.System) {
			skipped = append(skipped, Skipped{Line: line, ID: c.ID, Reason: "GPU not in catalog"})
			continue
		}
		c.Dense = dense
		q := estimate.Query{Model: c.Model, GPU: c.System, Backend: "trtllm", Precision: strings.ToLower(t.get(row, "precision")), Mode: "agg"}
		var e1, e2, e3, e4 error
		q.TP, q.PP, e1 = parseParallel(t.get(row, "tp"))
		q.ISL, e2 = t.int(row, "isl")
		q.OSL, e3 = t.int(row, "osl")
		c.OutputTPS, e4 = t.num(row, "value")
		if err := errors.Join(e1, e2, e3, e4); err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		c.Query = q
		cases = append(cases, c)
	}
	return cases, skipped, nil
}

var parallelRe = regexp.MustCompile(`^tp(\d+)pp(\d+)$`)

// parseParallel reads "4" (tensor parallel) or "tp2pp4".
func parseParallel(s string) (tp, pp int, err error) {
	if m := parallelRe.FindStringSubmatch(s); m != nil {
		tp, _ = strconv.Atoi(m[1])
		pp, _ = strconv.Atoi(m[2])
		return tp, pp, nil
	}
	tp, err = strconv.Atoi(s)
	if err != nil {
		return 0, 0, fmt.Errorf("column tp: %q is neither N nor tpNppM", s)
	}
	return tp, 1, nil
}

// campaign names a row's measurement campaign from silicon_data_source:
// "source_file=2026-04-06.csv; model=..." is campaign 2026-04-06.csv; a
// file under a project's data/ folder belongs to that project.
func campaign(source string) string {
	first, _, _ := strings.Cut(source, ";")
	first = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(first), "source_file="))
	if i := strings.Index(first, "/data/"); i >= 0 {
		first = first[:i]
		if j := strings.LastIndex(first, "/"); j >= 0 {
			first = first[j+1:]
		}
	}
	if first == "" {
		return "unknown"
	}
	return first
}
