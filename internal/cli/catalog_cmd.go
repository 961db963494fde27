package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/output"
)

type gpuList []*catalog.GPU

func (l gpuList) Header() []string {
	return []string{"NAME", "ARCH", "SMS", "MEMORY", "BANDWIDTH", "BF16", "FP8", "FP4", "NVLINK/DIR", "MIG"}
}

func (l gpuList) Rows() [][]string {
	var rows [][]string
	for _, g := range l {
		mig := "no"
		if g.MIG != nil {
			mig = fmt.Sprintf("%d", g.MIG.MaxInstances)
		}
		rows = append(rows, []string{g.Name, g.Architecture, fmt.Sprint(g.SMCount), fmt.Sprintf("%.1f GiB", g.MemoryGiB),
			fmt.Sprintf("%.0f GB/s", g.MemoryBandwidthGBps), tf(g.TFLOPS[catalog.BF16]), tf(g.TFLOPS[catalog.FP8]),
			tf(g.TFLOPS[catalog.FP4]), fmt.Sprintf("%.0f GB/s", g.NVLinkGBpsPerDir), mig})
	}
	return rows
}

func (l gpuList) Items() []any { return items(l) }

func tf(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

type deviceRow struct {
	Name              string  `json:"name"`
	GPU               string  `json:"gpu"`
	Kind              string  `json:"kind"`
	Slice             string  `json:"slice,omitempty"`
	MemoryGiB         float64 `json:"memoryGiB"`
	ComputeFraction   float64 `json:"computeFraction"`
	BandwidthFraction float64 `json:"bandwidthFraction"`
	VGPUProfile       string  `json:"vgpuProfile,omitempty"`
}

type deviceList []deviceRow

func (l deviceList) Header() []string {
	return []string{"DEVICE", "KIND", "MEMORY", "COMPUTE", "BANDWIDTH", "VGPU-PROFILE"}
}

func (l deviceList) Rows() [][]string {
	var rows [][]string
	for _, d := range l {
		rows = append(rows, []string{d.Name, d.Kind, fmt.Sprintf("%.2f GiB", d.MemoryGiB), fmt.Sprintf("%.3f", d.ComputeFraction),
			fmt.Sprintf("%.3f", d.BandwidthFraction), dash(d.VGPUProfile)})
	}
	return rows
}

func (l deviceList) Items() []any { return items(l) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type modelRow struct {
	*catalog.Model
	ParamsB       float64 `json:"paramsBillions"`
	ActiveParamsB float64 `json:"activeParamsBillions"`
	KVBytesBF16   float64 `json:"kvBytesPerTokenBF16"`
}

type modelList []modelRow

func (l modelList) Header() []string {
	return []string{"MODEL", "ARCHITECTURE", "PARAMS", "ACTIVE", "LAYERS", "ATTENTION", "KV/TOKEN(BF16)"}
}

func (l modelList) Rows() [][]string {
	var rows [][]string
	for _, m := range l {
		att := fmt.Sprintf("GQA %d/%d", m.AttentionHeads, m.KVHeads)
		if m.MLA != nil {
			att = "MLA"
		}
		if m.SlidingWindow > 0 {
			att += fmt.Sprintf("+SWA%d", m.SlidingWindow)
		}
		if m.Sparse != nil {
			att += fmt.Sprintf("+DSA%d", m.Sparse.TopK)
		}
		if n := m.LinearLayers(); n > 0 {
			att += fmt.Sprintf("+%d linear", n)
		}
		rows = append(rows, []string{m.Name, m.Architecture, fmt.Sprintf("%.1fB", m.ParamsB), fmt.Sprintf("%.1fB", m.ActiveParamsB),
			fmt.Sprint(m.Layers), att, fmt.Sprintf("%.0f KiB", m.KVBytesBF16/1024)})
	}
	return rows
}

func (l modelList) Items() []any { return items(l) }

func items[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func newCatalogCmd(g *globals) *cobra.Command {
	var modelConfig string
	cmd := &cobra.Command{
		Use:       "catalog gpus|devices|models",
		Short:     "List the GPUs, devices (whole GPUs and their slices) and models gpuplane knows",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"gpus", "devices", "models"},
		RunE: func(cmd *cobra.Command, args []string) error {
			env, _, err := g.envWithModel(modelConfig)
			if err != nil {
				return err
			}
			f, _ := g.format()
			switch strings.ToLower(args[0]) {
			case "gpus", "gpu":
				return output.Write(g.stdout, f, gpuList(env.Catalog.GPUs))
			case "devices", "device":
				var l deviceList
				for _, d := range env.Catalog.Devices() {
					l = append(l, deviceRow{Name: d.Name(), GPU: d.GPU.Name, Kind: d.Kind, Slice: d.Slice, MemoryGiB: d.MemoryGiB,
						ComputeFraction: d.ComputeFraction, BandwidthFraction: d.BandwidthFraction, VGPUProfile: d.VGPUProfile})
				}
				return output.Write(g.stdout, f, l)
			case "models", "model":
				var l modelList
				for _, m := range env.Catalog.Models {
					l = append(l, modelRow{Model: m, ParamsB: m.TotalParams() / 1e9, ActiveParamsB: m.ActiveParams() / 1e9,
						KVBytesBF16: m.KVBytesPerToken(catalog.BF16)})
				}
				return output.Write(g.stdout, f, l)
			}
			return fmt.Errorf("catalog: %q is not gpus, devices or models", args[0])
		},
	}
	cmd.Flags().StringVar(&modelConfig, "model-config", "", "also list a model from a Hugging Face config.json")
	return cmd
}
