package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
)

type moeTermsTable struct{ *calibrate.MoEResult }

func (t moeTermsTable) Header() []string {
	return []string{"SET", "N", "FAILED", "TTFT MAPE", "TPOT MAPE", "TERMS PER MOE LAYER"}
}

func (t moeTermsTable) Rows() [][]string {
	row := func(name string, s calibrate.Stats, terms string) []string {
		return []string{name, fmt.Sprint(s.N), fmt.Sprint(s.Failed), pct(s.TTFTMAPE), pct(s.TPOTMAPE), terms}
	}
	chosen := ""
	for _, b := range perf.Backends {
		if v, ok := t.Chosen[b]; ok {
			chosen += fmt.Sprintf("%s: %v; ", b, v)
		}
	}
	rows := [][]string{
		row("held out by "+t.By+": MoE agg", t.HeldOut.MoEAgg, "picked without the group"),
		row("held out by "+t.By+": MoE disagg", t.HeldOut.Disagg, ""),
		row("held out by "+t.By+": all MoE runs", t.HeldOut.Overall, ""),
		row("no terms: all MoE runs", t.Without.Overall, "none"),
		row("in sample: all MoE runs", t.InSample.Overall, chosen),
		{"80% intervals from held-out runs, widened per kind: measured inside (cross-fitted)", fmt.Sprint(t.Coverage.N), "",
			fmt.Sprintf("%.0f%%", 100*t.Coverage.TTFTInside), fmt.Sprintf("%.0f%%", 100*t.Coverage.TPOTInside), ""},
		{"", "", "", "", "", ""},
	}
	for _, f := range t.Folds {
		rows = append(rows, []string{"fold " + f.Held + " (" + string(f.Backend) + ")", fmt.Sprint(f.Cases), "", "", "", f.Terms.String()})
	}
	return rows
}

func newCalibrateMoECmd(g *globals) *cobra.Command {
	var dir, out, by string
	cmd := &cobra.Command{
		Use:   "moe",
		Short: "Choose, per backend, the MoE serving terms the kernel tables do not time, held out by model",
		Long: `Two costs of MoE layers lie outside the fused-MoE kernels the tables time. Engines run prompts
eagerly, and the MoE path (routing, host syncs on expert counts, launches) is CPU-bound for short
prompts: the model prices it as a floor per MoE layer under every iteration with prompt tokens.
Routing, top-k, permutation and combine run as kernels of their own in every iteration: a fixed
cost per MoE layer. This command predicts the measured MoE serving runs over a grid of both (floors
0-5 ms, layer costs 0-100 us), picks per backend the pair with the least mean TTFT plus TPOT error,
and scores each model (--cv) at the pair picked on the other models. With --out it writes the
parameters (--params, or the embedded ones) with the chosen terms and the MoE kinds' intervals
taken from the held-out predictions.

  gpuplane calibrate moe --data ../shared/calibration
  gpuplane calibrate moe --data ../shared/calibration --out params.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, ds, err := calibrationData(g, dir)
			if err != nil {
				return err
			}
			t0 := time.Now()
			res, err := calibrate.FitMoETerms(env, calibrate.MoECases(ds.Cases), calibrate.DefaultMoEGrid, by, func(i, n int, t calibrate.MoETerms) {
				fmt.Fprintf(g.stderr, "[%d/%d] %v per MoE layer, %s\n", i, n, t, time.Since(t0).Round(time.Second))
			})
			if err != nil {
				return err
			}
			if out != "" {
				if err := writeParams(g, out, res.Params(env.Params)); err != nil {
					return err
				}
			}
			f, err := g.format()
			if err != nil {
				return err
			}
			return output.Write(g.stdout, f, moeTermsTable{res})
		},
	}
	cmd.Flags().StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv")
	cmd.Flags().StringVar(&out, "out", "", "write the parameters with the chosen terms to this file")
	cmd.Flags().StringVar(&by, "cv", "model", "what to hold out: model, system or campaign")
	return cmd
}
