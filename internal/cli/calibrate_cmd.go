package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

type calibrationReport struct {
	calibrate.Report
	Cases       int     `json:"cases"`
	Fitted      bool    `json:"fitted"`
	Loss        float64 `json:"loss"`
	Evaluations int     `json:"evaluations,omitempty"`
	Seconds     float64 `json:"seconds"`
	ParamsFile  string  `json:"params_file,omitempty"`
	// SkippedBy says why rows were left out (-v lists each).
	SkippedBy []calibrate.ReasonCount `json:"skipped_by_reason,omitempty"`
}

// statsColumns head a table of calibrate.Stats rows (statsRow), after the
// first column's name.
var statsColumns = []string{"N", "FAILED", "TTFT MAPE", "TPOT MAPE", "THROUGHPUT MAPE", "PREDICTED FASTER (TTFT / TPOT / THROUGHPUT)"}

// statsRow is one row of statsColumns under name.
func statsRow(name string, s calibrate.Stats) []string {
	return []string{name, fmt.Sprint(s.N), fmt.Sprint(s.Failed), pct(s.TTFTMAPE), pct(s.TPOTMAPE), pct(s.TPSMAPE), optimistic(s)}
}

// blankStatsRow separates the parts of a statsColumns table.
func blankStatsRow() []string { return make([]string, 1+len(statsColumns)) }

func (r calibrationReport) Header() []string { return append([]string{"GROUP"}, statsColumns...) }

func (r calibrationReport) Rows() [][]string {
	row := func(s calibrate.Stats) []string { return statsRow(s.Group, s) }
	rows := [][]string{row(r.Overall), row(r.DenseAgg), row(r.MoEAgg), row(r.Disagg), row(r.MaxTput), blankStatsRow()}
	for _, g := range r.Groups {
		rows = append(rows, row(g))
	}
	return rows
}

// calibrationEnv is the model and the benchmark harness a calibration
// command predicts the measured runs with.
func calibrationEnv(g *globals, harness string) (estimate.Env, serving.Harness, error) {
	env, err := g.env()
	if err != nil {
		return env, "", err
	}
	h, err := serving.ParseHarness(harness)
	if err != nil {
		return env, "", fmt.Errorf("--harness: %w", err)
	}
	return env, h, nil
}

// calibrationData is the model and the measured runs under dir, for the
// calibration commands that predict with no harness of their own.
func calibrationData(g *globals, dir string) (estimate.Env, *calibrate.Dataset, error) {
	env, err := g.env()
	if err != nil {
		return env, nil, err
	}
	ds, err := loadCalibration(g, dir, env)
	return env, ds, err
}

// loadCalibration reads the measured runs under dir and says on stderr
// how many rows were left out and why; -v lists each row.
func loadCalibration(g *globals, dir string, env estimate.Env) (*calibrate.Dataset, error) {
	ds, err := calibrate.LoadDir(dir, env.Catalog)
	if err != nil {
		return nil, err
	}
	if len(ds.Skipped) > 0 {
		var parts []string
		for _, r := range calibrate.SkipReasons(ds.Skipped) {
			parts = append(parts, fmt.Sprintf("%d %s", r.Rows, r.Reason))
		}
		fmt.Fprintf(g.stderr, "%s: rows left out: %d (%s)\n", dir, len(ds.Skipped), strings.Join(parts, "; "))
		for _, s := range ds.Skipped {
			g.log.Debug("row left out", "line", s.Line, "id", s.ID, "reason", s.Reason, "kept", s.Of)
		}
	}
	return ds, nil
}

// optimistic is the share of runs predicted faster than measured, per
// metric, "-" where no run measured it.
func optimistic(s calibrate.Stats) string {
	f := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", *v)
	}
	return f(s.TTFTOptimistic) + " / " + f(s.TPOTOptimistic) + " / " + f(s.TPSOptimistic)
}

func pct(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", v)
}

func newCalibrateCmd(g *globals) *cobra.Command {
	var dir, out, cv string
	var fit bool
	var maxEvals int
	var ttftWeight float64
	var harness, knobs, loss string
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Report (and with --fit, refit) the performance model against measured serving runs",
		Long: `Predicts every measured configuration in the calibration folder and reports the mean
absolute percentage error of TTFT and TPOT per (system, backend, model, mode) and overall,
and which side the errors fall on: the share of runs predicted faster than measured (a lower
TTFT or TPOT, a higher throughput). About half is balanced; far above half, the model promises
more than the hardware gives. With --cv the same figures come from held-out predictions.
With --fit it first fits the architecture efficiencies and backend overheads (never a
per-row factor) on aggregated dense runs and the max-throughput tables, and writes the
parameter file given by --out.

  gpuplane calibrate --data ../shared/calibration
  gpuplane calibrate --data ../shared/calibration --fit --out internal/perf/params/default.yaml
  gpuplane calibrate --data ../shared/calibration --cv model --max-evals 300

--loss picks what the fit minimises: mape, the reported metric, or log, the mean absolute log ratio.
MAPE punishes a prediction too slow without bound and one too fast by at most 100%, so a fit to it
leans toward predicting too fast; log weighs twice too fast like twice too slow.

--knobs picks what is fitted, a comma-separated list of gemm (GEMM efficiencies per architecture),
attention (attention efficiencies) and serving (backend overheads, all-reduce efficiency); the
default is all three. --knobs attention,serving keeps the GEMM efficiencies of --params, e.g. those
gpuplane calibrate kernels fitted to the measured tables.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cv != "" && !slices.Contains(calibrate.CVUnits, cv) {
				return fmt.Errorf("--cv: %q, want one of %s", cv, strings.Join(calibrate.CVUnits, ", "))
			}
			if _, err := calibrate.ParseKnobs(knobs); err != nil {
				return fmt.Errorf("--%w", err)
			}
			if cv != "" && fit {
				return fmt.Errorf("--cv fits each fold itself; leave out --fit")
			}
			if maxEvals < 1 || maxEvals > 1_000_000 {
				return fmt.Errorf("--max-evals: %d, want 1 to 1000000 evaluations", maxEvals)
			}
			if !(ttftWeight > 0 && ttftWeight <= 1000) { // NaN fails too
				return fmt.Errorf("--ttft-weight: %g, want above 0 and at most 1000 (1 weighs TTFT like TPOT)", ttftWeight)
			}
			if !slices.Contains(calibrate.Losses, loss) {
				return fmt.Errorf("--loss: %q, want one of %s", loss, strings.Join(calibrate.Losses, ", "))
			}
			if !fit && cv == "" && (cmd.Flags().Changed("max-evals") || cmd.Flags().Changed("ttft-weight") || cmd.Flags().Changed("knobs") || cmd.Flags().Changed("loss")) {
				return fmt.Errorf("--max-evals, --ttft-weight, --knobs and --loss shape a fit: give them with --fit or --cv")
			}
			env, h, err := calibrationEnv(g, harness)
			if err != nil {
				return err
			}
			ds, err := loadCalibration(g, dir, env)
			if err != nil {
				return err
			}
			if cv != "" {
				rows, err := ds.GridRows()
				if err != nil {
					return err
				}
				rep, err := crossValidate(g, env, ds, rows, cv, calibrate.FitOptions{MaxEvaluations: maxEvals, TTFTWeight: ttftWeight, Harness: h, Knobs: knobs, Loss: loss})
				if err != nil {
					return err
				}
				if out != "" {
					if err := writeParams(g, out, withHeldOutIntervals(env.Params, rep.Intervals)); err != nil {
						return err
					}
				}
				f, _ := g.format()
				return output.Write(g.stdout, f, rep)
			}
			t0 := time.Now()
			rep := calibrationReport{Cases: len(ds.Cases)}
			if fit {
				if out == "" {
					return fmt.Errorf("--fit needs --out FILE for the fitted parameters")
				}
				res, err := calibrate.Fit(env, env.Params, ds.FitSet(), calibrate.FitOptions{MaxEvaluations: maxEvals, TTFTWeight: ttftWeight, Harness: h, Knobs: knobs, Loss: loss,
					Progress: func(n int, loss float64) {
						if n%25 == 0 {
							fmt.Fprintf(g.stderr, "\rfit: %d evaluations, loss %.4f, %s", n, loss, time.Since(t0).Round(time.Second))
						}
					}})
				fmt.Fprintln(g.stderr)
				if err != nil {
					return err
				}
				res.Params.Source = fmt.Sprintf("gpuplane calibrate --fit --loss %s: %d cases, %d evaluations, loss %.4f (from %.4f)",
					loss, len(ds.FitSet()), res.Evaluations, res.Loss, res.InitialLoss)
				if err := writeParams(g, out, res.Params); err != nil {
					return err
				}
				env.Params = res.Params
				rep.Fitted, rep.Evaluations, rep.ParamsFile = true, res.Evaluations, out
			}
			preds := calibrate.PredictWith(env, ds.Cases, h)
			rep.Report = calibrate.Summarise(preds, len(ds.Skipped))
			rep.SkippedBy = calibrate.SkipReasons(ds.Skipped)
			rep.Loss = calibrate.Loss(preds)
			rep.Seconds = time.Since(t0).Seconds()
			f, _ := g.format()
			return output.Write(g.stdout, f, rep)
		},
	}
	cmd.Flags().StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv (and trtllm_max_throughput.csv)")
	cmd.Flags().BoolVar(&fit, "fit", false, "fit the parameters before reporting")
	cmd.Flags().StringVar(&knobs, "knobs", "gemm,attention,serving", "what --fit and --cv fit, comma-separated: gemm, attention, serving")
	cmd.Flags().StringVar(&cv, "cv", "", "cross-validate: hold out each model, system or campaign in turn, fit on the rest (--max-evals per fold) and report the held-out MAPE")
	cmd.Flags().StringVar(&out, "out", "", "where --fit writes the parameter file (with --cv: the starting parameters with the held-out intervals)")
	cmd.Flags().IntVar(&maxEvals, "max-evals", 1500, "cap on objective evaluations during --fit")
	cmd.Flags().Float64Var(&ttftWeight, "ttft-weight", 1, "weight of TTFT errors against TPOT and throughput errors in --fit")
	cmd.Flags().StringVar(&loss, "loss", calibrate.LossMAPE, "what --fit and --cv minimise: mape (mean absolute percentage error, the reported metric; it leans toward predicting too fast) or log (mean |ln(predicted/measured)|, even on both sides)")
	cmd.Flags().StringVar(&harness, "harness", string(calibrate.DefaultHarness), "benchmark client the measured runs are predicted under: steady, burst or queued")
	cmd.AddCommand(newCalibrateHarnessesCmd(g), newCalibrateDecisionsCmd(g), newCalibrateKernelsCmd(g), newCalibrateMoECmd(g), newCalibrateOpsCmd(g), newCalibrateHandoffCmd(g), newCalibrateADPCmd(g), newCalibratePoolsCmd(g), newCalibrateTTFTFloorCmd(g), newCalibrateMoELayerCmd(g), newCalibrateFrontendCmd(g), newCalibrateSpecCmd(g))
	return cmd
}

// withHeldOutIntervals is the starting parameters with the held-out
// intervals of a cross-validation; the spreads of the other pricing (with
// or without --kernels) stay as they were.
func withHeldOutIntervals(start *perf.Params, fresh *perf.Intervals) *perf.Params {
	p := start.Clone()
	iv := *fresh
	if old := start.Intervals; old != nil {
		if start.Kernels != nil {
			iv.Kinds = old.Kinds
		} else {
			iv.KernelKinds = old.KernelKinds
		}
	}
	p.Intervals = &iv
	return p
}
