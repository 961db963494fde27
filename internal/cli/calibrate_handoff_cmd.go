package cli

import (
	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
)

func newCalibrateHandoffCmd(g *globals) *cobra.Command {
	return newTermCmd(g, "handoff", "Choose, per backend, the fixed cost of a disaggregated hand-off, held out by campaign",
		`A disaggregated request pays more than moving its KV cache: the decode side admits it, agrees
with the prefill worker where the cache goes and sets up the transfer before any byte moves. This
command predicts the measured disaggregated runs over a grid of fixed costs per request (0-200 ms),
picks per backend the cost with the least mean TTFT plus TPOT error, and scores each group at the
cost picked on the others, holding out by campaign and by model in turn (--cv). A backend keeps its
cost only where its held-out runs come out better than with none both ways: a backend's
disaggregated runs are mostly one model family, so either grouping alone says little. With --out it
writes the parameters (--params, or the embedded ones) with the kept costs.

  gpuplane calibrate handoff --data ../shared/calibration
  gpuplane calibrate handoff --data ../shared/calibration --out params.yaml`,
		termSearch{
			term: calibrate.HandoffTerm, grid: calibrate.DefaultHandoffGrid, cases: calibrate.DisaggCases,
			table: termTable{none: "no hand-off cost", column: "HAND-OFF",
				stats: func(r calibrate.Report) calibrate.Stats { return r.Disagg }},
			step: "%g ms a hand-off",
		})
}

func newCalibrateADPCmd(g *globals) *cobra.Command {
	return newTermCmd(g, "adp", "Choose, per backend, how long an attention-DP rank holds a prompt for its peers, held out by campaign and model",
		`Attention data parallelism (dp) runs ranks that each schedule their own requests but meet in
every MoE layer. TensorRT-LLM balances them: while every rank is decoding, a prompt that arrives on
one rank waits until every rank has one, for at most a number of iterations, so that all ranks
prefill in the same iteration and no rank's prompt stalls the others' decode steps. Under light
load (a rank with nothing to decode) prompts start at once. The wait shows as TTFT.

This command predicts the measured aggregated runs with dp > 1 over a grid of holds (0-160
iterations), picks per backend the hold with the least mean TTFT plus TPOT error, and scores each
group at the hold picked on the others, holding out by campaign and by model in turn (--cv). A
backend keeps its hold only where its held-out runs come out better than with none both ways. With
--out it writes the parameters (--params, or the embedded ones) with the kept holds.

  gpuplane calibrate adp --data ../shared/calibration
  gpuplane calibrate adp --data ../shared/calibration --out params.yaml`,
		termSearch{
			term: calibrate.ADPTerm, grid: calibrate.DefaultADPGrid, cases: calibrate.ADPCases,
			table: termTable{none: "no hold", column: "HOLD",
				stats: func(r calibrate.Report) calibrate.Stats { return r.Overall }},
			step: "a hold of %g iterations",
		})
}
