package kernels

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// GEMMRow is one measured dense GEMM at a shape a model layer runs: m
// tokens by a k x n weight, at the compute precision the model prices it.
type GEMMRow struct {
	System    string
	Backend   string
	Precision catalog.Precision
	M, N, K   float64
	Peak, BW  float64 // the catalog GPU's dense peak (FLOP/s) at Precision and bandwidth (B/s)
	Seconds   float64
}

// GEMMSummary is what the performance model prices a family's dense GEMMs
// with at one compute precision (perf.FamilyParams: gemm,
// gemmPrecisionBandwidth, gemmCallUs), fitted to the measured tables
// instead of to end-to-end runs.
type GEMMSummary struct {
	Efficiency float64 `json:"efficiency"`
	Bandwidth  float64 `json:"bandwidth"`
	CallUs     float64 `json:"call_us"`
}

// Seconds prices a row the way perf.Worker prices a dense GEMM: its
// roofline over the weights and the input and output activations, plus
// one call.
func (g GEMMSummary) Seconds(r GEMMRow) float64 {
	bytes := r.N*r.K*r.Precision.Bytes() + 2*r.M*(r.K+r.N)
	return perf.GEMMRoofline(2*r.M*r.N*r.K, r.M, bytes, r.Peak*g.Efficiency, r.BW*g.Bandwidth) + g.CallUs*1e-6
}

// gemmPrecision maps a GEMM table's dtype to the compute precision it
// measures: block and per-tensor FP8 both serve FP8 checkpoints.
func gemmPrecision(dtype string) (catalog.Precision, bool) {
	switch dtype {
	case "bfloat16", "float16":
		return catalog.BF16, true
	case "fp8", "fp8_block":
		return catalog.FP8, true
	case "nvfp4":
		return catalog.FP4, true
	}
	return "", false
}

// GEMMRows returns a set's GEMM rows at model-layer sizes (n and k of at
// least 1024: hidden sizes and their tp slices) that gpu runs natively.
func GEMMRows(s *Set, gpu *catalog.GPU) []GEMMRow {
	var out []GEMMRow
	dtypes := make([]string, 0, len(s.GEMM))
	for d := range s.GEMM {
		dtypes = append(dtypes, d)
	}
	sort.Strings(dtypes)
	for _, d := range dtypes {
		p, ok := gemmPrecision(d)
		if !ok || gpu.ComputePrecision(p) != p {
			continue
		}
		s.GEMM[d].leaves(func(key []float64, ms float64, _ int) {
			if key[1] < 1024 || key[2] < 1024 {
				return
			}
			out = append(out, GEMMRow{System: s.System, Backend: s.Backend, Precision: p, M: key[0], N: key[1], K: key[2],
				Peak: gpu.PeakTFLOPS(p) * 1e12, BW: gpu.MemoryBandwidthGBps * 1e9, Seconds: ms / 1e3})
		})
	}
	return out
}

// MinGEMMRows is the fewest rows a precision's summary is fitted on.
const MinGEMMRows = 40

// maxFitRows bounds a summary fit: a deterministic thinning (thin) keeps
// every shape class and keeps the fit to seconds.
const maxFitRows = 20000

// FitGEMM fits one precision's summary (rows of one compute precision) by
// Nelder-Mead on the mean squared log error in log-parameter space.
func FitGEMM(rows []GEMMRow) (GEMMSummary, error) {
	if len(rows) < 16 {
		return GEMMSummary{}, fmt.Errorf("gemm fit: %d rows; need at least 16", len(rows))
	}
	rows = thin(rows, maxFitRows)
	unpack := func(x []float64) GEMMSummary {
		// Bounds above one leave the optimiser a slope to come back down
		// (a flat cap stalls the simplex); perf takes at most one.
		return GEMMSummary{Efficiency: math.Min(1.5, math.Exp(x[0])), Bandwidth: math.Min(1.5, math.Exp(x[1])), CallUs: math.Min(1000, math.Exp(x[2]))}
	}
	g, err := fitLogError(rows, unpack, func(g GEMMSummary, r GEMMRow) float64 { return g.Seconds(r) / r.Seconds },
		[]float64{math.Log(0.6), math.Log(0.7), math.Log(5)})
	if err != nil {
		return GEMMSummary{}, fmt.Errorf("gemm fit: %w", err)
	}
	return g, nil
}

// ScoreGEMM predicts rows with g.
func ScoreGEMM(g GEMMSummary, rows []GEMMRow) Score {
	pred := make([]float64, len(rows))
	meas := make([]float64, len(rows))
	for i, r := range rows {
		pred[i], meas[i] = g.Seconds(r), r.Seconds
	}
	return score(pred, meas)
}

// holdGEMM splits rows: about one in n is held out, by a hash of its
// system, backend, precision and shape.
func holdGEMM(rows []GEMMRow, n int) (fit, held []GEMMRow) {
	for _, r := range rows {
		if oneIn(n, r.System+"/"+r.Backend+"/"+string(r.Precision), r.M, r.N, r.K) {
			held = append(held, r)
		} else {
			fit = append(fit, r)
		}
	}
	return fit, held
}

// GEMMResult is one family's summary at one compute precision with its
// validation.
type GEMMResult struct {
	Family    string            `json:"family"`
	Precision catalog.Precision `json:"precision"`
	Systems   []string          `json:"systems"`
	Summary   GEMMSummary       `json:"summary"`
	Rows      int               `json:"rows"`
	// HeldOut scores one row in ten predicted by a fit on the other nine;
	// Embedded scores the same rows at the parameters in use.
	HeldOut  Score  `json:"held_out"`
	Embedded *Score `json:"embedded,omitempty"`
	// BySystem scores each system's rows predicted by a fit on the
	// family's other systems.
	BySystem map[string]Score `json:"by_system,omitempty"`
}

// ValidateGEMM fits a family's summary at one precision on all its rows
// and scores it held out by row and by system; current, when given, is
// scored on the same held-out rows for comparison.
func ValidateGEMM(family string, rows []GEMMRow, current *GEMMSummary) (GEMMResult, error) {
	res := GEMMResult{Family: family, Rows: len(rows)}
	if len(rows) > 0 {
		res.Precision = rows[0].Precision
	}
	for _, r := range rows {
		if r.Precision != res.Precision {
			return res, fmt.Errorf("%s: rows of %s and %s in one fit", family, res.Precision, r.Precision)
		}
	}
	system := func(r GEMMRow) string { return r.System }
	res.Systems = systemsOf(rows, system)
	fit, held := holdGEMM(rows, 10)
	g, err := FitGEMM(fit)
	if err != nil {
		return res, fmt.Errorf("%s/%s: %w", family, res.Precision, err)
	}
	res.HeldOut = ScoreGEMM(g, held)
	if current != nil && current.Efficiency > 0 && current.Bandwidth > 0 {
		sc := ScoreGEMM(*current, held)
		res.Embedded = &sc
	}
	if res.BySystem, err = scoreBySystem(res.Systems, rows, system, FitGEMM, ScoreGEMM); err != nil {
		return res, fmt.Errorf("%s/%s %w", family, res.Precision, err)
	}
	if res.Summary, err = FitGEMM(rows); err != nil {
		return res, err
	}
	return res, nil
}
