package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/kernels"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
)

type moeTable struct {
	Results []kernels.MoEResult `json:"moe"`
}

func (t moeTable) Header() []string {
	return []string{"FAMILY", "BACKEND", "PRECISION", "SYSTEMS", "ROWS", "HELD OUT", "MAPE AS DENSE GEMM", "MAPE FITTED", "BIAS", "MAPE TABLE", "BY SYSTEM", "COMPUTE", "BANDWIDTH", "ROWS HALF", "LAUNCH US"}
}

func (t moeTable) Rows() [][]string {
	var rows [][]string
	for _, r := range t.Results {
		var by []string
		for _, s := range r.Systems {
			if sc, ok := r.BySystem[s]; ok {
				by = append(by, fmt.Sprintf("%s %.1f%%", s, sc.MAPEPct))
			}
		}
		k := r.Kernel
		rows = append(rows, []string{r.Family, string(r.Backend), string(r.Precision), strings.Join(r.Systems, ","),
			fmt.Sprint(k.Rows), fmt.Sprint(r.HeldOut.N), pct(r.Dense.MAPEPct), pct(r.HeldOut.MAPEPct), fmt.Sprintf("%+.1f%%", r.HeldOut.BiasPct), pct(r.Table.MAPEPct),
			strings.Join(by, " "), fmt.Sprintf("%.3f", k.Compute), fmt.Sprintf("%.3f", k.Bandwidth), fmt.Sprintf("%.1f", k.RowsHalf), fmt.Sprintf("%.1f", k.LaunchUs)})
	}
	return rows
}

func newCalibrateKernelsCmd(g *globals) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "kernels",
		Short: "Fit the embedded kernel summary (fused MoE per architecture, backend and precision) to measured kernel tables",
		Long: `Reads the fused-MoE tables (moe_perf) of a kernel tree and fits, per GPU architecture, backend
and weight precision, the four numbers the performance model prices routed experts with: the
fraction of tensor peak, the fraction of memory bandwidth, the rows per expert at half speed and a
fixed cost per call. Nothing here sees an end-to-end serving run.

Each summary is validated twice: one table row in ten is held out and predicted by a fit on the
rest (next to the same rows priced as dense GEMMs, as the model does without a summary), and for
architectures measured on several systems each system is predicted by a fit on the others.
With --out it writes the parameters (--params, or the embedded ones) with the summaries in.

  gpuplane calibrate kernels --kernels ../shared/reference/kernels
  gpuplane calibrate kernels --kernels ../shared/reference/kernels --out params.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.kernelsDir == "" {
				return fmt.Errorf("--kernels: required; point it at the kernel tables' root, e.g. --kernels ../shared/reference/kernels")
			}
			env, err := g.env()
			if err != nil {
				return err
			}
			groups, gpus, err := moeGroups(g.kernelsDir, env.Catalog)
			if err != nil {
				return err
			}
			var t moeTable
			params := env.Params.Clone()
			params.Kernels = nil
			for i, grp := range groups {
				if len(grp.Rows) < kernels.MinMoERows {
					fmt.Fprintf(g.stderr, "[%d/%d] %s/%s/%s: %d rows, fewer than %d: no summary (experts stay priced as dense GEMMs)\n",
						i+1, len(groups), grp.Family, grp.Backend, grp.Precision, len(grp.Rows), kernels.MinMoERows)
					continue
				}
				fmt.Fprintf(g.stderr, "[%d/%d] %s/%s/%s: %d rows\n", i+1, len(groups), grp.Family, grp.Backend, grp.Precision, len(grp.Rows))
				fam := params.Families[grp.Family]
				res, err := kernels.ValidateMoE(grp, fam, gpus[grp.Family].ComputePrecision(grp.Precision))
				if err != nil {
					return err
				}
				t.Results = append(t.Results, res)
				if fam.MoE == nil {
					fam.MoE = map[perf.Backend]map[catalog.Precision]*perf.MoEKernel{}
				}
				if fam.MoE[grp.Backend] == nil {
					fam.MoE[grp.Backend] = map[catalog.Precision]*perf.MoEKernel{}
				}
				k := res.Kernel
				fam.MoE[grp.Backend][grp.Precision] = &k
			}
			if out != "" {
				params.Source = "moe kernels fitted by gpuplane calibrate kernels; " + params.Source
				if err := writeParams(g, out, params); err != nil {
					return err
				}
			}
			f, err := g.format()
			if err != nil {
				return err
			}
			return output.Write(g.stdout, f, t)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the parameters with the fitted summaries to this file")
	return cmd
}

// moeGroups reads every catalog system's fused-MoE tables and groups them
// by architecture, backend and precision; gpus gives one catalog GPU per
// architecture (for the compute precision a weight precision runs at).
func moeGroups(dir string, cat *catalog.Catalog) ([]kernels.MoEGroup, map[string]*catalog.GPU, error) {
	systems, err := kernels.Systems(dir)
	if err != nil {
		return nil, nil, err
	}
	byKey := map[string]*kernels.MoEGroup{}
	gpus := map[string]*catalog.GPU{}
	ccs := map[string]map[string]bool{} // architecture -> majors measured
	for _, s := range systems {
		gpu, err := cat.GPU(s)
		if err != nil {
			continue // a system outside the catalog: nothing to price with it
		}
		arch := gpu.Architecture
		if gpus[arch] == nil {
			gpus[arch] = gpu
			ccs[arch] = map[string]bool{}
		}
		ccs[arch][perf.CCMajor(gpu.ComputeCapability)] = true
		backends, err := kernels.Backends(dir, s)
		if err != nil {
			return nil, nil, err
		}
		for _, b := range backends {
			be, err := perf.ParseBackend(b)
			if err != nil {
				continue
			}
			rows, err := kernels.LoadMoE(dir, s, b)
			if err != nil {
				return nil, nil, err
			}
			for _, r := range rows {
				key := arch + "/" + b + "/" + string(r.Precision)
				if byKey[key] == nil {
					byKey[key] = &kernels.MoEGroup{Family: arch, Backend: be, Precision: r.Precision}
				}
				byKey[key].Rows = append(byKey[key].Rows, r)
			}
		}
	}
	if len(byKey) == 0 {
		return nil, nil, fmt.Errorf("--kernels %s: no moe_perf rows for a catalog GPU", dir)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]kernels.MoEGroup, 0, len(keys))
	for _, k := range keys {
		g := *byKey[k]
		if len(ccs[g.Family]) == 1 {
			for cc := range ccs[g.Family] {
				g.ComputeCapability = cc
			}
		}
		out = append(out, g)
	}
	return out, gpus, nil
}
