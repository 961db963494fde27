package kernels

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"

	"gonum.org/v1/gonum/optimize"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// MoEGroup is the rows one summary is fitted on: an architecture's
// systems under one backend at one summary key (Precision: the weight
// precision, or perf.MXFP4 for MXFP4 experts).
type MoEGroup struct {
	Family    string
	Backend   perf.Backend
	Precision catalog.Precision
	// ComputeCapability is the systems' common major compute capability
	// ("" when they differ): the summary applies to GPUs of that major.
	ComputeCapability string
	Rows              []MoERow
	// SkewedEP are the group's skewed expert-parallel rows
	// (LoadMoESkewedEP): scored, not fitted.
	SkewedEP []MoERow
}

// Systems lists the group's systems.
func (g MoEGroup) Systems() []string {
	return systemsOf(g.Rows, func(r MoERow) string { return r.System })
}

// systemsOf lists the systems rows were measured on, sorted.
func systemsOf[R any](rows []R, system func(R) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		if s := system(r); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// scoreBySystem predicts each system's rows by a fit on the other
// systems' rows; nil for fewer than two systems.
func scoreBySystem[R, K, S any](systems []string, rows []R, system func(R) string, fit func([]R) (K, error), score func(K, []R) S) (map[string]S, error) {
	if len(systems) < 2 {
		return nil, nil
	}
	by := map[string]S{}
	for _, s := range systems {
		var in, out []R
		for _, r := range rows {
			if system(r) == s {
				out = append(out, r)
			} else {
				in = append(in, r)
			}
		}
		k, err := fit(in)
		if err != nil {
			return nil, fmt.Errorf("without %s: %w", s, err)
		}
		by[s] = score(k, out)
	}
	return by, nil
}

// Score is how a kernel model predicts a set of rows.
type Score struct {
	N        int     `json:"n"`
	MAPEPct  float64 `json:"mape_pct"`
	BiasPct  float64 `json:"bias_pct"` // median of predicted/measured - 1
	MedRatio float64 `json:"-"`
}

// ScoreMoE predicts rows with k.
func ScoreMoE(k perf.MoEKernel, rows []MoERow) Score {
	if len(rows) == 0 {
		return Score{}
	}
	pred := make([]float64, len(rows))
	meas := make([]float64, len(rows))
	for i, r := range rows {
		pred[i], meas[i] = k.Seconds(r.Shape, r.Peak, r.BW), r.Seconds
	}
	return score(pred, meas)
}

// score compares predictions with measurements: MAPE and the median ratio.
func score(pred, meas []float64) Score {
	if len(pred) == 0 {
		return Score{}
	}
	ratios := make([]float64, len(pred))
	var ape float64
	for i, p := range pred {
		ratios[i] = p / meas[i]
		ape += math.Abs(p-meas[i]) / meas[i]
	}
	sort.Float64s(ratios)
	med := ratios[len(ratios)/2]
	return Score{N: len(pred), MAPEPct: 100 * ape / float64(len(pred)), BiasPct: 100 * (med - 1), MedRatio: med}
}

// DenseGEMMKernel is how experts are priced without a summary: as dense
// GEMMs at the family's fitted GEMM efficiency and weight-streaming
// bandwidth, with the dense GEMM's small-tile loss and no call cost.
func DenseGEMMKernel(f *perf.FamilyParams, computePrec catalog.Precision) perf.MoEKernel {
	eff := f.GEMM[computePrec]
	if eff == 0 {
		eff = f.GEMM[catalog.BF16]
	}
	return perf.MoEKernel{Compute: eff, Bandwidth: f.GEMMBandwidthFor(computePrec), RowsHalf: perf.GEMMRowsHalf}
}

// MinMoERows is the fewest table rows a summary is fitted on: five numbers
// from a handful of shapes would describe those shapes, not the kernel.
const MinMoERows = 40

// FitMoE fits a summary to rows by Nelder-Mead on the mean squared log
// error (ratios, so short and long calls weigh alike), in log-parameter space.
func FitMoE(rows []MoERow) (perf.MoEKernel, error) {
	if len(rows) < 8 {
		return perf.MoEKernel{}, fmt.Errorf("moe fit: %d rows; need at least 8", len(rows))
	}
	unpack := func(x []float64) perf.MoEKernel {
		return perf.MoEKernel{
			Compute:    math.Min(1.2, math.Exp(x[0])),
			Bandwidth:  math.Min(1.2, math.Exp(x[1])),
			RowsHalf:   math.Min(1e5, math.Exp(x[2])),
			LaunchUs:   math.Min(1e5, math.Exp(x[3])),
			ParamsHalf: math.Min(1e12, math.Exp(x[4])),
		}
	}
	k, err := fitLogError(rows, unpack, func(k perf.MoEKernel, r MoERow) float64 { return k.Seconds(r.Shape, r.Peak, r.BW) / r.Seconds },
		[]float64{math.Log(0.5), math.Log(0.6), math.Log(32), math.Log(20), math.Log(1e6)})
	if err != nil {
		return perf.MoEKernel{}, fmt.Errorf("moe fit: %w", err)
	}
	k.Rows = len(rows)
	return k, nil
}

// fitLogError minimises the mean squared log of ratio (predicted over
// measured) over rows in log-parameter space from x0 (minimizeLog), so
// short and long calls weigh alike, and returns the best point unpacked.
func fitLogError[R, K any](rows []R, unpack func([]float64) K, ratio func(K, R) float64, x0 []float64) (K, error) {
	obj := func(x []float64) float64 {
		k := unpack(x)
		var s float64
		for _, r := range rows {
			d := math.Log(ratio(k, r))
			s += d * d
		}
		return s / float64(len(rows))
	}
	x, err := minimizeLog(obj, x0)
	if err != nil {
		var zero K
		return zero, err
	}
	return unpack(x), nil
}

// minimizeLog minimises obj over log-parameters by Nelder-Mead from x0,
// restarted from the best point with a shrinking simplex (a first simplex
// of size 1 can stall on a bound).
func minimizeLog(obj func([]float64) float64, x0 []float64) ([]float64, error) {
	x, best := x0, obj(x0)
	for _, size := range []float64{1, 0.3, 0.1} {
		res, err := optimize.Minimize(optimize.Problem{Func: obj}, x,
			&optimize.Settings{FuncEvaluations: 400, Converger: &optimize.FunctionConverge{Absolute: 1e-7, Iterations: 60}},
			&optimize.NelderMead{SimplexSize: size})
		if err != nil && res == nil {
			return nil, err
		}
		if res.F < best {
			x, best = res.X, res.F
		}
	}
	return x, nil
}

// HoldMoE splits rows: about one in n is held out, by a hash of its system,
// precision and shape, so the split is the same on every run.
func HoldMoE(rows []MoERow, n int) (fit, held []MoERow) {
	for _, r := range rows {
		s := r.Shape
		if oneIn(n, r.System+"/"+string(r.Precision), s.Tokens, s.TopK, s.Experts, s.ExpertParams, s.SliceParams) {
			held = append(held, r)
		} else {
			fit = append(fit, r)
		}
	}
	return fit, held
}

// oneIn picks about one item in n by a hash of its label and keys, the
// same on every run.
func oneIn(n int, label string, keys ...float64) bool {
	h := fnv.New64a()
	h.Write([]byte(label))
	var b [8]byte
	for _, v := range keys {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	return mix(h.Sum64())%uint64(n) == 0
}

// MoEResult is one group's summary with its validation.
type MoEResult struct {
	Family    string            `json:"family"`
	Backend   perf.Backend      `json:"backend"`
	Precision catalog.Precision `json:"precision"`
	Systems   []string          `json:"systems"`
	Kernel    perf.MoEKernel    `json:"kernel"`
	// HeldOut scores one row in ten, predicted by a fit on the other nine;
	// Dense scores the same rows priced as dense GEMMs (no summary).
	HeldOut Score `json:"held_out"`
	Dense   Score `json:"dense_gemm"`
	// Table scores the same rows interpolated from each system's table of
	// the other nine (the op model, Set.MoETime).
	Table Score `json:"table_interpolation"`
	// BySystem scores each system's rows predicted by a fit on the family's
	// other systems (families measured on two or more systems).
	BySystem map[string]Score `json:"by_system,omitempty"`
	// SkewedEPMeanRank and SkewedEPBusiestRank score the fitted summary on
	// the skewed expert-parallel rows, priced at the mean rank and at the
	// busiest rank of random routing (what serving prices).
	SkewedEPMeanRank    Score `json:"skewed_ep_mean_rank"`
	SkewedEPBusiestRank Score `json:"skewed_ep_busiest_rank"`
}

// ValidateMoE fits a group's summary on all its rows and scores it held
// out, by row and by system.
func ValidateMoE(g MoEGroup, fam *perf.FamilyParams, computePrec catalog.Precision) (MoEResult, error) {
	res := MoEResult{Family: g.Family, Backend: g.Backend, Precision: g.Precision, Systems: g.Systems()}
	fit, held := HoldMoE(g.Rows, 10)
	k, err := FitMoE(fit)
	if err != nil {
		return res, fmt.Errorf("%s/%s/%s: %w", g.Family, g.Backend, g.Precision, err)
	}
	res.HeldOut = ScoreMoE(k, held)
	res.Table = scoreTable(fit, held)
	if fam != nil {
		res.Dense = ScoreMoE(DenseGEMMKernel(fam, computePrec), held)
	}
	if res.BySystem, err = scoreBySystem(res.Systems, g.Rows, func(r MoERow) string { return r.System }, FitMoE, ScoreMoE); err != nil {
		return res, fmt.Errorf("%s/%s/%s %w", g.Family, g.Backend, g.Precision, err)
	}
	if res.Kernel, err = FitMoE(g.Rows); err != nil {
		return res, err
	}
	res.Kernel.HeldOutMAPEPct = math.Round(res.HeldOut.MAPEPct*10) / 10
	res.Kernel.ComputeCapability = g.ComputeCapability
	res.SkewedEPMeanRank, res.SkewedEPBusiestRank = scoreSkewedEP(res.Kernel, g.SkewedEP)
	return res, nil
}

// scoreSkewedEP scores k on skewed expert-parallel rows priced at the mean
// rank (the rows' Ranks cleared) and at the busiest rank.
func scoreSkewedEP(k perf.MoEKernel, rows []MoERow) (mean, busiest Score) {
	flat := make([]MoERow, len(rows))
	for i, r := range rows {
		r.Shape.Ranks = 0
		flat[i] = r
	}
	return ScoreMoE(k, flat), ScoreMoE(k, rows)
}

// scoreTable predicts held rows by interpolation in their own system's
// table of the fit rows; rows outside a measured shape class are skipped.
func scoreTable(fit, held []MoERow) Score {
	bySystem := map[string][]MoERow{}
	for _, r := range fit {
		bySystem[r.System] = append(bySystem[r.System], r)
	}
	grids := map[string]map[catalog.Precision]*Grid{}
	for sys, rs := range bySystem {
		grids[sys] = moeGrids(rs, nil)
	}
	var pred, meas []float64
	for _, r := range held {
		smp := moeSample(r)
		if v, ok := moeLookup(grids[r.System][r.Precision], smp.Key); ok {
			pred, meas = append(pred, v), append(meas, smp.Latency)
		}
	}
	return score(pred, meas)
}
