package cli

import (
	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
)

func newCalibrateTTFTFloorCmd(g *globals) *cobra.Command {
	return newTermCmd(g, "ttft-floor", "Choose, per backend, the least TTFT a MoE request sees per expert of each MoE layer, held out by campaign and model",
		`At light load, MoE models' requests take far longer to their first token than their prompt's
GPU work: on TensorRT-LLM, 128-token prompts to Qwen3-235B on 8 H100 measure about 240 ms where the
kernels account for about 70 ms, and the gap shrinks as queueing takes over under load. The latency
lies on the request's path outside the engine's iterations (the running decodes do not slow down),
so the model prices it as a floor under each request's TTFT, per routed expert of each MoE layer
(models with more experts measure more; held out by model, that carries better than a floor per
layer). This command predicts the measured MoE serving runs over a grid of floors (0-32 us an
expert of a layer), picks per backend the floor with the least mean TTFT plus TPOT error, and
scores each group at the floor picked on the others, holding out by campaign and by model in turn
(--cv). A backend keeps its floor only where
its held-out runs come out better than with none every way. With --out it writes the parameters
(--params, or the embedded ones) with the kept floors.

  gpuplane calibrate ttft-floor --data ../shared/calibration
  gpuplane calibrate ttft-floor --data ../shared/calibration --out params.yaml`,
		termSearch{
			term: calibrate.TTFTFloorTerm, grid: calibrate.DefaultTTFTFloorGrid, cases: calibrate.MoECases,
			table: termTable{none: "no TTFT floor", column: "FLOOR",
				stats: func(r calibrate.Report) calibrate.Stats { return r.Overall }},
			step: "a TTFT floor of %g us an expert of a MoE layer",
		})
}
