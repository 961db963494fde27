package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/serving"
)

type harnessTable struct{ calibrate.HarnessReport }

func (t harnessTable) Header() []string {
	h := []string{"GROUP", "N"}
	for _, s := range serving.Harnesses {
		h = append(h, "TTFT MAPE "+string(s))
	}
	return append(h, "BEST")
}

func (t harnessTable) Rows() [][]string {
	var rows [][]string
	for _, g := range t.Groups {
		r := []string{g.Group, fmt.Sprint(g.N)}
		for _, s := range serving.Harnesses {
			r = append(r, pct(g.TTFTMAPE[string(s)]))
		}
		rows = append(rows, append(r, g.Best))
	}
	all := []string{"all dense agg rows", fmt.Sprint(t.N)}
	for _, s := range serving.Harnesses {
		all = append(all, pct(t.Overall[string(s)]))
	}
	rows = append(rows, append(all, ""))
	return append(rows, []string{"best harness per group", fmt.Sprint(t.N), "", "", "", pct(t.BestPerGroup)})
}

func newCalibrateHarnessesCmd(g *globals) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "harnesses",
		Short: "Compare benchmark harnesses on the dense aggregated runs (TTFT MAPE per group)",
		Long: `Predicts the dense aggregated measured runs under each benchmark harness (steady, burst,
queued) and reports TTFT MAPE per (system, backend, model) group and overall. The last line,
choosing the harness group by group, is a bound on what the data allows, not a model: the
calibration itself uses one harness for every row.

  gpuplane calibrate harnesses --data ../shared/calibration`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, ds, err := calibrationData(g, dir)
			if err != nil {
				return err
			}
			f, _ := g.format()
			return output.Write(g.stdout, f, harnessTable{calibrate.CompareHarnesses(env, ds.Cases)})
		},
	}
	cmd.Flags().StringVar(&dir, "data", "../shared/calibration", "folder with silicon_calibration.csv")
	return cmd
}
