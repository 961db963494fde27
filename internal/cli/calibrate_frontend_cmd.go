package cli

import (
	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
)

func newCalibrateFrontendCmd(g *globals) *cobra.Command {
	return newTermCmd(g, "frontend", "Choose, per backend, how much of the API server's time per request runs in parallel, held out by campaign and model",
		`Each worker's API server spends a fitted time on every request (frontendOverheadMs plus
frontendPerTokenUs per prompt token) before the engine sees it. Requests that queue for all of it
one at a time make a burst of users wait in line; requests that spend some of it on their own
(asynchronous handling) do not. The share changes how bursts queue, not what a lone request
sees. This command predicts every measured serving run over shares of 0-1 in parallel, picks per
backend the share with the least mean TTFT plus TPOT error, and scores each group at the share
picked on the others, holding out by campaign and by model in turn (--cv). A backend keeps its
share only where its held-out runs come out better than with all of it queueing every way. With
--out it writes the parameters (--params, or the embedded ones) with the kept shares.

  gpuplane calibrate frontend --data ../shared/calibration
  gpuplane calibrate frontend --data ../shared/calibration --out params.yaml`,
		termSearch{
			term: calibrate.FrontendTerm, grid: calibrate.DefaultFrontendGrid, cases: calibrate.ServingCases,
			table: termTable{none: "all of it queues", column: "PARALLEL",
				stats: func(r calibrate.Report) calibrate.Stats { return r.Overall }},
			step: "%g of the API server's time in parallel",
		})
}
