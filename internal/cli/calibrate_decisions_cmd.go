package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/output"
)

// decisionTable is the decisions summary, overall and per backend; -o json
// carries every decision.
type decisionTable struct {
	calibrate.DecisionReport
	Params string `json:"params"`
}

func (t decisionTable) Header() []string {
	return []string{"SET", "GRIDS", "DECISIONS", "MISSES", "NOTHING FOUND", "MISS RATE", "MEAN SHORTFALL"}
}

func (t decisionTable) Rows() [][]string {
	row := func(name string, grids int, items []calibrate.Decision) []string {
		tl := calibrate.TallyOf(items)
		rate, mean, g := "-", "-", "-"
		if tl.Decisions > 0 {
			rate = fmt.Sprintf("%.1f%%", 100*tl.MissRate)
		}
		if tl.Decisions > tl.Misses {
			mean = fmt.Sprintf("%.1f%%", 100*tl.MeanShortfall)
		}
		if grids > 0 {
			g = fmt.Sprint(grids)
		}
		return []string{name, g, fmt.Sprint(tl.Decisions), fmt.Sprint(tl.Misses), fmt.Sprint(tl.NothingFit), rate, mean}
	}
	// Grids the model answers in full score its accuracy; the others
	// also score its coverage (a run it cannot express is never picked).
	var full []calibrate.Decision
	by := map[string][]calibrate.Decision{}
	for _, d := range t.Items {
		if d.Unanswered > 0 {
			continue
		}
		full = append(full, d)
		b := strings.Split(d.Grid, "/")[1]
		by[b] = append(by[b], d)
	}
	rows := [][]string{row("all grids ("+t.Params+")", t.Grids, t.Items), row("grids answered in full", 0, full)}
	for _, b := range slices.Sorted(maps.Keys(by)) {
		rows = append(rows, row("  "+b, 0, by[b]))
	}
	return rows
}

func newCalibrateDecisionsCmd(g *globals) *cobra.Command {
	var dir, harness string
	var confidence float64
	cmd := &cobra.Command{
		Use:   "decisions",
		Short: "Score the choices a user makes from predictions against measured grids",
		Long: `Over each measured grid of aggregated runs (same system, backend, model, precision and
ISL/OSL), for TPOT limits at the grid's measured quartiles, picks the highest output
throughput per GPU (parallelism and concurrency) whose predicted TPOT meets the limit, and
scores the pick by what was measured: a miss when its measured TPOT is over the limit or
when nothing was predicted to meet a limit that something measured met; the shortfall is
how far a pick that meets the limit falls below the best measured one. Runs the model
cannot express stay in the grid: they can be the best, never the pick.

The embedded parameters were fitted on these runs; --params hack/calibration-prior.yaml
scores the model before any fit to them.

  gpuplane calibrate decisions
  gpuplane calibrate decisions --params hack/calibration-prior.yaml -o json
  gpuplane calibrate decisions --confidence 0.9`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, h, err := calibrationEnv(g, harness)
			if err != nil {
				return err
			}
			ds, err := loadCalibration(g, dir, env)
			if err != nil {
				return err
			}
			rows, err := ds.GridRows()
			if err != nil {
				return fmt.Errorf("--data: %w", err)
			}
			var agg []calibrate.Case
			for _, c := range ds.Cases {
				if c.Source == "silicon" && c.Mode == "agg" {
					agg = append(agg, c)
				}
			}
			preds := calibrate.PredictWith(env, agg, h)
			if confidence != 0 {
				if !(confidence >= 0.5 && confidence <= 0.99) {
					return fmt.Errorf("--confidence: %g, want 0.5 to 0.99 (the chance the measured TPOT meets the limit)", confidence)
				}
				if env.Params.Intervals == nil || len(env.Params.Intervals.Kinds) == 0 {
					return fmt.Errorf("--confidence: the parameters carry no intervals; use parameters written by calibrate --cv --out")
				}
				// Pick by the TPOT the run stays under at that confidence.
				for i := range preds {
					key, _ := preds[i].IntervalKey()
					k, why := env.Params.IntervalFor(key)
					if why != "" {
						return fmt.Errorf("--confidence: %s", why)
					}
					if k != nil {
						preds[i].PredTPOTms = k.TPOT.Upper(preds[i].PredTPOTms, confidence)
					}
				}
			}
			rep := calibrate.Decide(rows, preds)
			params := "embedded parameters"
			if g.paramsFile != "" {
				params = g.paramsFile
			}
			if confidence != 0 {
				params += fmt.Sprintf(", confidence %g", confidence)
			}
			f, _ := g.format()
			return output.Write(g.stdout, f, decisionTable{DecisionReport: rep, Params: params})
		},
	}
	cmd.Flags().StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv")
	cmd.Flags().Float64Var(&confidence, "confidence", 0, "pick by the TPOT a run stays under with this probability (0.5-0.99), from the parameters' held-out intervals")
	cmd.Flags().StringVar(&harness, "harness", string(calibrate.DefaultHarness), "benchmark client the measured runs are predicted under: steady, burst or queued")
	return cmd
}
