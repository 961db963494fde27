package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
)

type handoffTable struct{ *calibrate.HandoffResult }

func (t handoffTable) Header() []string {
	return []string{"SET", "N", "FAILED", "TTFT MAPE", "TPOT MAPE", "HAND-OFF"}
}

func (t handoffTable) Rows() [][]string {
	row := func(name string, s calibrate.Stats, cost string) []string {
		return []string{name, fmt.Sprint(s.N), fmt.Sprint(s.Failed), pct(s.TTFTMAPE), pct(s.TPOTMAPE), cost}
	}
	rows := [][]string{row("no hand-off cost", t.Without.Disagg, "none")}
	for _, h := range t.HeldOut {
		rows = append(rows, row("held out by "+h.By, h.Report.Disagg, "picked without the group"))
	}
	rows = append(rows, row("kept", t.Kept.Disagg, ""))
	for _, b := range perf.Backends {
		picked, ok := t.Picked[b]
		if !ok {
			continue
		}
		losses := fmt.Sprintf("%.1f without", t.WithoutLoss[b])
		for _, h := range t.HeldOut {
			losses += fmt.Sprintf(", %.1f held out by %s", h.Loss[b], h.By)
		}
		verdict := "kept: better held out"
		if t.Chosen[b] == 0 && picked != 0 {
			verdict = "not kept: not better held out every way"
		}
		rows = append(rows, []string{fmt.Sprintf("%s: picked %g ms; loss %s", b, picked, losses), "", "", "", "", fmt.Sprintf("%g ms (%s)", t.Chosen[b], verdict)})
	}
	for _, h := range t.HeldOut {
		rows = append(rows, []string{"", "", "", "", "", ""})
		for _, f := range h.Folds {
			rows = append(rows, []string{fmt.Sprintf("fold %s %s (%s)", h.By, f.Held, f.Backend), fmt.Sprint(f.Cases), "", "", "", fmt.Sprintf("%g ms", f.HandoffMs)})
		}
	}
	return rows
}

func newCalibrateHandoffCmd(g *globals) *cobra.Command {
	var dir, out string
	var by []string
	cmd := &cobra.Command{
		Use:   "handoff",
		Short: "Choose, per backend, the fixed cost of a disaggregated hand-off, held out by campaign",
		Long: `A disaggregated request pays more than moving its KV cache: the decode side admits it, agrees
with the prefill worker where the cache goes and sets up the transfer before any byte moves. This
command predicts the measured disaggregated runs over a grid of fixed costs per request (0-200 ms),
picks per backend the cost with the least mean TTFT plus TPOT error, and scores each group at the
cost picked on the others, holding out by campaign and by model in turn (--cv). A backend keeps its
cost only where its held-out runs come out better than with none both ways: a backend's
disaggregated runs are mostly one model family, so either grouping alone says little. With --out it
writes the parameters (--params, or the embedded ones) with the kept costs.

  gpuplane calibrate handoff --data ../shared/calibration
  gpuplane calibrate handoff --data ../shared/calibration --out params.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(by) == 0 {
				return fmt.Errorf("--cv: empty; give one or more of campaign, model and system (default campaign,model)")
			}
			env, ds, err := calibrationData(g, dir)
			if err != nil {
				return err
			}
			f, err := g.format()
			if err != nil {
				return err
			}
			t0 := time.Now()
			res, err := calibrate.FitHandoff(env, calibrate.DisaggCases(ds.Cases), calibrate.DefaultHandoffGrid, by, func(i, n int, ms float64) {
				fmt.Fprintf(g.stderr, "[%d/%d] %g ms a hand-off, %s\n", i, n, ms, time.Since(t0).Round(time.Second))
			})
			if err != nil {
				return err
			}
			if out != "" {
				if err := writeParams(g, out, res.Params(env.Params)); err != nil {
					return err
				}
			}
			return output.Write(g.stdout, f, handoffTable{res})
		},
	}
	cmd.Flags().StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv")
	cmd.Flags().StringVar(&out, "out", "", "write the parameters with the kept costs to this file")
	cmd.Flags().StringSliceVar(&by, "cv", []string{"campaign", "model"}, "what to hold out, each in turn: campaign, model or system; a cost is kept only if better held out every way")
	return cmd
}
