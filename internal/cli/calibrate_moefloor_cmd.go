package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/atomicfile"
	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
)

type floorTable struct{ *calibrate.FloorResult }

func (t floorTable) Header() []string {
	return []string{"SET", "N", "FAILED", "TTFT MAPE", "TPOT MAPE", "FLOOR PER MOE LAYER"}
}

func (t floorTable) Rows() [][]string {
	row := func(name string, s calibrate.Stats, floor string) []string {
		return []string{name, fmt.Sprint(s.N), fmt.Sprint(s.Failed), pct(s.TTFTMAPE), pct(s.TPOTMAPE), floor}
	}
	chosen := ""
	for _, b := range perf.Backends {
		if v, ok := t.Chosen[b]; ok {
			chosen += fmt.Sprintf("%s %g us ", b, v)
		}
	}
	rows := [][]string{
		row("held out by "+t.By+": MoE agg", t.HeldOut.MoEAgg, "picked without the group"),
		row("held out by "+t.By+": MoE disagg", t.HeldOut.Disagg, ""),
		row("held out by "+t.By+": all MoE runs", t.HeldOut.Overall, ""),
		row("no floor: all MoE runs", t.Without.Overall, "0"),
		row("in sample: all MoE runs", t.InSample.Overall, chosen),
		{"80% intervals from held-out runs: measured inside (cross-fitted)", fmt.Sprint(t.Coverage.N), "",
			fmt.Sprintf("%.0f%%", 100*t.Coverage.TTFTInside), fmt.Sprintf("%.0f%%", 100*t.Coverage.TPOTInside), ""},
		{"", "", "", "", "", ""},
	}
	for _, f := range t.Folds {
		rows = append(rows, []string{"fold " + f.Held + " (" + string(f.Backend) + ")", fmt.Sprint(f.Cases), "", "", "", fmt.Sprintf("%g us", f.FloorUs)})
	}
	return rows
}

func newCalibrateMoEFloorCmd(g *globals) *cobra.Command {
	var dir, out, by string
	cmd := &cobra.Command{
		Use:   "moe-floor",
		Short: "Choose, per backend, the least time per MoE layer of an iteration with prompt tokens, held out by model",
		Long: `Short prompts on MoE models take longer than their GPU work on SGLang and TensorRT-LLM: the eager
MoE path (routing, host syncs on expert counts, launches) is CPU-bound. The model prices this as a
floor per MoE layer under every iteration that carries prompt tokens. This command predicts the
measured MoE serving runs at each floor from 0 to 5 ms, picks per backend the floor with the least
mean TTFT plus TPOT error, and scores each model (--cv) at the floor picked on the other models.
With --out it writes the parameters (--params, or the embedded ones) with the floors and the MoE
kinds' intervals taken from the held-out predictions.

  gpuplane calibrate moe-floor --data ../shared/calibration
  gpuplane calibrate moe-floor --data ../shared/calibration --out params.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := g.env()
			if err != nil {
				return err
			}
			ds, err := calibrate.LoadDir(dir, env.Catalog)
			if err != nil {
				return err
			}
			t0 := time.Now()
			res, err := calibrate.FitMoEFloor(env, calibrate.MoEFloorCases(ds.Cases), calibrate.MoEFloorGrid, by, func(i, n int, v float64) {
				fmt.Fprintf(g.stderr, "[%d/%d] floor %g us per MoE layer, %s\n", i, n, v, time.Since(t0).Round(time.Second))
			})
			if err != nil {
				return err
			}
			if out != "" {
				p := res.Params(env.Params)
				if err := p.Validate(); err != nil {
					return fmt.Errorf("chosen parameters: %w", err)
				}
				b, err := p.Marshal()
				if err != nil {
					return err
				}
				if err := atomicfile.Write(out, b, 0o644); err != nil {
					return fmt.Errorf("--out: %w", err)
				}
				fmt.Fprintf(g.stderr, "wrote %s\n", out)
			}
			f, err := g.format()
			if err != nil {
				return err
			}
			return output.Write(g.stdout, f, floorTable{res})
		},
	}
	cmd.Flags().StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv")
	cmd.Flags().StringVar(&out, "out", "", "write the parameters with the chosen floors to this file")
	cmd.Flags().StringVar(&by, "cv", "model", "what to hold out: model, system or campaign")
	return cmd
}
