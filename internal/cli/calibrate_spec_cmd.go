package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/output"
)

// specTable reports an acceptance-length search.
type specTable struct{ *calibrate.SpecResult }

func (t specTable) value(a float64) string {
	if a == 0 {
		return "no drafting"
	}
	return fmt.Sprintf("%d drafted, %g gained a step", t.Tokens, a)
}

func (t specTable) Header() []string {
	return []string{"SET", "N", "FAILED", "TTFT MAPE", "TPOT MAPE", "ACCEPTANCE"}
}

func (t specTable) Rows() [][]string {
	row := func(name string, s calibrate.Stats, v string) []string {
		return []string{name, fmt.Sprint(s.N), fmt.Sprint(s.Failed), pct(s.TTFTMAPE), pct(s.TPOTMAPE), v}
	}
	rows := [][]string{row("without drafting", t.Without.Overall, t.value(0))}
	for _, h := range t.HeldOut {
		rows = append(rows, row("held out by "+h.By, h.Report.Overall, "picked without the group"))
	}
	rows = append(rows, row("all runs at the pick", t.AtPicked.Overall, t.value(t.Picked)))
	for _, h := range t.HeldOut {
		rows = append(rows, []string{"", "", "", "", "", ""})
		for _, f := range h.Folds {
			rows = append(rows, []string{fmt.Sprintf("fold %s %s (%s)", h.By, f.Held, f.Backend), fmt.Sprint(f.Cases), "", "", "", t.value(f.Value)})
		}
	}
	return rows
}

func newCalibrateSpecCmd(g *globals) *cobra.Command {
	var dir string
	var by []string
	var k int
	var grid []float64
	var f calibrate.SpecFilter
	cmd := &cobra.Command{
		Use:   "spec",
		Short: "Price measured runs as if they drafted (speculative decoding) and find the acceptance length they show, held out by group",
		Long: `Measured runs do not always say whether the engine drafted tokens (MTP, EAGLE). This command
prices the runs the filters keep as runs drafting --spec-tokens tokens a step, at every acceptance
length of --grid (0 first: no drafting), picks the length with the least mean TTFT plus TPOT error,
and scores each group (--cv: campaign, model or system) at the length picked on the others. Runs
whose held-out error falls well below the no-drafting row look drafted; the fold picks say at what
acceptance. With your own runs (--data), it is how to read an acceptance length off them for
estimate's and configure's --spec-accept.

  gpuplane calibrate spec --data ../shared/calibration --backend trtllm --model deepseek-ai/DeepSeek-R1 \
    --mode disagg --max-concurrency 256 --spec-tokens 3 --cv system,campaign`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, ds, err := calibrationData(g, dir)
			if err != nil {
				return err
			}
			format, err := g.format()
			if err != nil {
				return err
			}
			cases, err := f.Apply(env, ds.Cases)
			if err != nil {
				return err
			}
			t0 := time.Now()
			res, err := calibrate.FitSpecAccept(env, cases, k, grid, by, func(i, n int, a float64) {
				fmt.Fprintf(g.stderr, "[%d/%d] acceptance %g over %d runs, %s\n", i, n, a, len(cases), time.Since(t0).Round(time.Second))
			})
			if err != nil {
				return err
			}
			return output.Write(g.stdout, format, specTable{res})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv")
	fl.IntVar(&k, "spec-tokens", 3, "tokens drafted per step in the pricing")
	fl.Float64SliceVar(&grid, "grid", calibrate.DefaultSpecGrid, "acceptance lengths to try, starting at 0 (no drafting)")
	fl.StringSliceVar(&by, "cv", []string{"system", "campaign"}, "what to hold out, each in turn: campaign, model or system")
	fl.StringVar(&f.Backend, "backend", "", "only runs of this engine (default: all)")
	fl.StringVar(&f.Model, "model", "", "only runs of this model (default: all)")
	fl.StringVar(&f.Mode, "mode", "", "only agg or disagg runs (default: both)")
	fl.IntVar(&f.MaxConcurrency, "max-concurrency", 0, "only runs of at most this many users (default: any)")
	return cmd
}
