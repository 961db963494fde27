package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// termTable reports a per-backend term search (calibrate handoff, adp).
type termTable struct {
	*calibrate.TermResult
	// none labels the baseline row; column heads the value column; stats
	// picks the runs the term touches.
	none, column string
	stats        func(calibrate.Report) calibrate.Stats
	// unit follows each value (the term's own).
	unit string
	// zero names the value 0 where it is not "none" (a built-in default).
	zero string
}

// value prints v, naming 0 as the term does.
func (t termTable) value(v float64) string {
	if v == 0 {
		if t.zero != "" {
			return t.zero
		}
		return "none"
	}
	return fmt.Sprintf("%g %s", v, t.unit)
}

func (t termTable) Header() []string {
	return []string{"SET", "N", "FAILED", "TTFT MAPE", "TPOT MAPE", t.column}
}

func (t termTable) Rows() [][]string {
	row := func(name string, s calibrate.Stats, v string) []string {
		return []string{name, fmt.Sprint(s.N), fmt.Sprint(s.Failed), pct(s.TTFTMAPE), pct(s.TPOTMAPE), v}
	}
	rows := [][]string{row(t.none, t.stats(t.Without), t.value(0))}
	for _, h := range t.HeldOut {
		rows = append(rows, row("held out by "+h.By, t.stats(h.Report), "picked without the group"))
	}
	rows = append(rows, row("kept", t.stats(t.Kept), ""))
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
		switch {
		case picked == 0:
			verdict = t.value(0) + " is best"
		case t.Chosen[b] == 0:
			verdict = "not kept: not better held out every way"
		}
		rows = append(rows, []string{fmt.Sprintf("%s: picked %s; loss %s", b, t.value(picked), losses), "", "", "", "", fmt.Sprintf("%s (%s)", t.value(t.Chosen[b]), verdict)})
	}
	for _, h := range t.HeldOut {
		rows = append(rows, []string{"", "", "", "", "", ""})
		for _, f := range h.Folds {
			rows = append(rows, []string{fmt.Sprintf("fold %s %s (%s)", h.By, f.Held, f.Backend), fmt.Sprint(f.Cases), "", "", "", t.value(f.Value)})
		}
	}
	return rows
}

// termSearch is what one term command runs: the term over grid on the
// runs cases picks.
type termSearch struct {
	term  calibrate.Term
	grid  []float64
	cases func([]calibrate.Case) []calibrate.Case
	table termTable
	// step names one grid point in the progress lines ("%g ms a hand-off").
	step string
}

// newTermCmd is a calibrate subcommand that runs one term search.
func newTermCmd(g *globals, use, short, long string, s termSearch) *cobra.Command {
	return termCommand(g, use, short, long, func(estimate.Env) termSearch { return s })
}

// termCommand is newTermCmd for a search that depends on the command's
// own flags or the catalog: search builds it once the flags are read.
func termCommand(g *globals, use, short, long string, search func(estimate.Env) termSearch) *cobra.Command {
	var dir, out string
	var by []string
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(by) == 0 {
				return fmt.Errorf("--cv: empty; give one or more of campaign, model and system (default campaign,model)")
			}
			env, ds, err := calibrationData(g, dir)
			if err != nil {
				return err
			}
			s := search(env)
			f, err := g.format()
			if err != nil {
				return err
			}
			t0 := time.Now()
			res, err := calibrate.FitTerm(env, s.cases(ds.Cases), s.term, s.grid, by, func(i, n int, v float64) {
				fmt.Fprintf(g.stderr, "[%d/%d] "+s.step+", %s\n", i, n, v, time.Since(t0).Round(time.Second))
			})
			if err != nil {
				return err
			}
			if out != "" {
				if err := writeParams(g, out, res.Params(env.Params)); err != nil {
					return err
				}
			}
			t := s.table
			t.TermResult, t.unit = res, s.term.Unit
			return output.Write(g.stdout, f, t)
		},
	}
	cmd.Flags().StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv")
	cmd.Flags().StringVar(&out, "out", "", "write the parameters with the kept values to this file")
	cmd.Flags().StringSliceVar(&by, "cv", []string{"campaign", "model"}, "what to hold out, each in turn: campaign, model or system; a value is kept only if better held out every way")
	return cmd
}
