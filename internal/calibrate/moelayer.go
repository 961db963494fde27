package calibrate

import (
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// DefaultMoELayerGrid is every cost per MoE layer FitTerm tries for
// MoEArchLayerTerm, in us: none, the baseline, to 80 us (the top of the
// backend-wide layer cost's grid).
var DefaultMoELayerGrid = []float64{0, 5, 10, 15, 20, 25, 30, 40, 60, 80}

// MoEArchLayerTerm is the cost per MoE layer of every iteration that an
// engine adds on GPUs of one architecture, beside its backend-wide one
// (perf.BackendParams.MoELayerUsByArch).
func MoEArchLayerTerm(arch string) Term {
	return Term{
		Name: "moe-layer", Unit: "us a MoE layer on " + arch, Max: 100000,
		Set: func(bp *perf.BackendParams, v float64) {
			if v > 0 {
				if bp.MoELayerUsByArch == nil {
					bp.MoELayerUsByArch = map[string]float64{}
				}
				bp.MoELayerUsByArch[arch] = v
				return
			}
			delete(bp.MoELayerUsByArch, arch)
			if len(bp.MoELayerUsByArch) == 0 {
				bp.MoELayerUsByArch = nil // as a file without the key reads
			}
		},
		Source:  "; MoE layer costs per architecture: gpuplane calibrate moe-layer",
		NoCases: "no measured MoE serving runs on " + arch + " GPUs in the data",
	}
}

// MoEArchCases are the measured MoE serving runs on GPUs of arch.
func MoEArchCases(cases []Case, cat *catalog.Catalog, arch string) []Case {
	return servingRuns(cases, func(c Case) bool {
		if c.Dense {
			return false
		}
		g, err := cat.GPU(c.System)
		return err == nil && g.Architecture == arch
	})
}
