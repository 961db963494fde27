package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

func newCalibratePoolsCmd(g *globals) *cobra.Command {
	return newTermCmd(g, "pools", "Choose, per backend, the decode knee that sizes disaggregated pools without worker counts, held out by campaign and model",
		`A disaggregated query without --prefill-workers and --decode-workers is sized the way an
operator sizes a deployment for its concurrency: decode engines take users up to their knee, the
batch whose decode step lasts a factor times a lone sequence's, and prefill engines keep up with
the request rate those decode engines drive. This command predicts the measured disaggregated
runs that give no worker counts over a grid of factors (1.5-12; 0 is the built-in `+fmt.Sprint(perf.DefaultPoolKnee)+`), picks
per backend the factor with the least mean TTFT plus TPOT error, and scores each group at the
factor picked on the others, holding out by campaign and by model in turn (--cv). A backend keeps
its factor only where its held-out runs come out better than at the built-in one every way. With
--out it writes the parameters (--params, or the embedded ones) with the kept factors.

  gpuplane calibrate pools --data ../shared/calibration
  gpuplane calibrate pools --data ../shared/calibration --out params.yaml`,
		termSearch{
			term: calibrate.PoolsTerm, grid: calibrate.DefaultPoolsGrid, cases: calibrate.PoolsCases,
			table: termTable{none: "the built-in knee", column: "KNEE", zero: fmt.Sprintf("built-in (%g x)", perf.DefaultPoolKnee),
				stats: func(r calibrate.Report) calibrate.Stats { return r.Disagg }},
			step: "a knee of %g x a lone step",
		})
}
