package cli

import (
	"fmt"
	"time"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// cvReport is a cross-validation as a table: the pooled held-out errors
// first (the headline), the same rows predicted by the starting parameters
// (--params, unfitted) for comparison, then each fold.
type cvReport struct {
	By      string           `json:"by"`
	HeldOut calibrate.Report `json:"held_out"`
	Start   calibrate.Report `json:"start"`
	Folds   []calibrate.Fold `json:"folds"`
	Seconds float64          `json:"seconds"`
	// Intervals are the held-out spreads per kind of query; Coverage
	// scores them on groups they were not taken from.
	Intervals *perf.Intervals    `json:"intervals"`
	Coverage  calibrate.Coverage `json:"interval_coverage"`
	// Decisions are picks made from the held-out predictions.
	Decisions calibrate.DecisionReport `json:"decisions"`
	// Predictions are every held-out prediction (-o json only): the
	// residuals that intervals and decisions are scored from.
	Predictions []calibrate.Prediction `json:"predictions"`
}

func (r cvReport) Header() []string { return append([]string{"SET"}, statsColumns...) }

func (r cvReport) Rows() [][]string {
	row := statsRow
	rows := [][]string{
		row("held out by "+r.By+": dense agg", r.HeldOut.DenseAgg),
		row("held out by "+r.By+": max-throughput", r.HeldOut.MaxTput),
		row("start (--params, unfitted): dense agg", r.Start.DenseAgg),
		row("start (--params, unfitted): max-throughput", r.Start.MaxTput),
		blankStatsRow(),
	}
	if r.Coverage.N > 0 {
		rows = append(rows, []string{"80% intervals, widened per kind: measured inside (cross-fitted)", fmt.Sprint(r.Coverage.N), "",
			fmt.Sprintf("%.0f%%", 100*r.Coverage.TTFTInside), fmt.Sprintf("%.0f%%", 100*r.Coverage.TPOTInside), "", ""})
	}
	if d := r.Decisions; d.Decisions > 0 {
		rows = append(rows, []string{fmt.Sprintf("decisions from held-out predictions: %d misses (%.1f%%, %d nothing found), mean shortfall %.1f%%",
			d.Misses, 100*d.MissRate, d.NothingFit, 100*d.MeanShortfall), fmt.Sprint(d.Decisions), "", "", "", "", ""})
	}
	rows = append(rows, blankStatsRow())
	for _, f := range r.Folds {
		rows = append(rows, row("fold "+f.Held, f.Test))
	}
	return rows
}

// crossValidate runs calibrate --cv over the fit set.
func crossValidate(g *globals, env estimate.Env, ds *calibrate.Dataset, gridRows []calibrate.GridRow, by string, opt calibrate.FitOptions) (cvReport, error) {
	t0 := time.Now()
	fitSet := ds.FitSet()
	start := calibrate.Summarise(calibrate.PredictWith(env, fitSet, opt.Harness), 0)
	fold := ""
	opt.Progress = func(n int, loss float64) {
		if n%25 == 0 {
			fmt.Fprintf(g.stderr, "\rcv %s: %d evaluations, loss %.4f, %s   ", fold, n, loss, time.Since(t0).Round(time.Second))
		}
	}
	res, err := calibrate.CrossValidate(env, env.Params, fitSet, by, opt, func(i, n int, held string) {
		fold = fmt.Sprintf("fold %d/%d (%s)", i, n, held)
	})
	fmt.Fprintln(g.stderr)
	if err != nil {
		return cvReport{}, err
	}
	// Kinds no fit sees (MoE, disaggregated) are out of sample for the
	// starting parameters themselves: their spread comes from those.
	outOfSample := append(append([]calibrate.Prediction{}, res.HeldOut.Prediction...), calibrate.PredictWith(env, ds.Unfitted(), opt.Harness)...)
	rep := cvReport{By: by, HeldOut: res.HeldOut, Start: start, Folds: res.Folds, Predictions: res.HeldOut.Prediction}
	source := fmt.Sprintf("gpuplane calibrate --cv %s: measured over predicted, fitted kinds held out by %s, the others under the starting parameters; tails widened until held-out groups land inside 80%%", by, by)
	if rep.Intervals, rep.Coverage, err = calibrate.CalibratedIntervals(outOfSample, by, env, source); err != nil {
		return cvReport{}, err
	}
	// Decisions over the grids whose runs were all held out and predicted.
	var held []calibrate.GridRow
	ids := map[string]bool{}
	for _, p := range res.HeldOut.Prediction {
		ids[p.ID] = true
	}
	for _, r := range gridRows {
		if ids[r.ID] {
			held = append(held, r)
		}
	}
	rep.Decisions = calibrate.Decide(held, res.HeldOut.Prediction)
	rep.Seconds = time.Since(t0).Seconds()
	return rep, nil
}
