package cli

import (
	"fmt"
	"time"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/estimate"
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
}

func (r cvReport) Header() []string {
	return []string{"SET", "N", "FAILED", "TTFT MAPE", "TPOT MAPE", "THROUGHPUT MAPE"}
}

func (r cvReport) Rows() [][]string {
	row := func(name string, s calibrate.Stats) []string {
		return []string{name, fmt.Sprint(s.N), fmt.Sprint(s.Failed), pct(s.TTFTMAPE), pct(s.TPOTMAPE), pct(s.TPSMAPE)}
	}
	rows := [][]string{
		row("held out by "+r.By+": dense agg", r.HeldOut.DenseAgg),
		row("held out by "+r.By+": max-throughput", r.HeldOut.MaxTput),
		row("start (--params, unfitted): dense agg", r.Start.DenseAgg),
		row("start (--params, unfitted): max-throughput", r.Start.MaxTput),
		{"", "", "", "", "", ""},
	}
	for _, f := range r.Folds {
		rows = append(rows, row("fold "+f.Held, f.Test))
	}
	return rows
}

// crossValidate runs calibrate --cv over the fit set.
func crossValidate(g *globals, env estimate.Env, ds *calibrate.Dataset, by string, opt calibrate.FitOptions) (cvReport, error) {
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
	return cvReport{By: by, HeldOut: res.HeldOut, Start: start, Folds: res.Folds, Seconds: time.Since(t0).Seconds()}, nil
}
