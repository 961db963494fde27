package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/calibrate"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
)

func newCalibrateMoELayerCmd(g *globals) *cobra.Command {
	var arch string
	cmd := termCommand(g, "moe-layer", "Choose, per backend, a cost per MoE layer of every iteration on one GPU architecture, held out by campaign and model",
		`The kernel tables time the fused expert GEMMs; what an engine runs around them in every
iteration (routing, permutation, finalisation) is priced as a cost per MoE layer per backend
(calibrate moe). An engine need not run the same kernels on every architecture: TensorRT-LLM's
decode at a few users misses about 20-30 us per MoE layer on Hopper (DeepSeek-R1, Qwen3-235B)
where on Blackwell it is priced 5-18 us slow. This command predicts the measured MoE serving runs
on GPUs of --arch over a grid of costs (0-80 us a layer, added to the backend's own), picks per
backend the cost with the least mean TTFT plus TPOT error, and scores each group at the cost
picked on the others, holding out by campaign and by model in turn (--cv). A backend keeps its cost
only where its held-out runs come out better than with none every way. With --out it writes the
parameters (--params, or the embedded ones) with the kept costs (backends.<b>.moeLayerUsByArch).

  gpuplane calibrate moe-layer --arch hopper --data ../shared/calibration
  gpuplane calibrate moe-layer --arch hopper --data ../shared/calibration --out params.yaml`,
		func(env estimate.Env) termSearch {
			return termSearch{
				term: calibrate.MoEArchLayerTerm(arch), grid: calibrate.DefaultMoELayerGrid,
				cases: func(cs []calibrate.Case) []calibrate.Case { return calibrate.MoEArchCases(cs, env.Catalog, arch) },
				table: termTable{none: "no cost of its own on " + arch, column: "LAYER COST",
					stats: func(r calibrate.Report) calibrate.Stats { return r.Overall }},
				step: "%g us a MoE layer on " + arch,
			}
		})
	cmd.PreRunE = func(*cobra.Command, []string) error { // before the data is read
		if !slices.Contains(catalog.Architectures, arch) {
			return fmt.Errorf("--arch: %q is not a GPU architecture; use one of %s", arch, strings.Join(catalog.Architectures, ", "))
		}
		return nil
	}
	cmd.Flags().StringVar(&arch, "arch", "", "GPU architecture whose MoE runs choose the cost: "+strings.Join(catalog.Architectures, ", "))
	return cmd
}
