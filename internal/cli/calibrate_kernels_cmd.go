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
	return []string{"FAMILY", "BACKEND", "PRECISION", "SYSTEMS", "ROWS", "HELD OUT", "MAPE AS DENSE GEMM", "MAPE FITTED", "BIAS", "MAPE TABLE", "BY SYSTEM",
		"EP SKEWED ROWS", "MAPE MEAN RANK", "MAPE BUSIEST RANK", "COMPUTE", "BANDWIDTH", "ROWS HALF", "LAUNCH US"}
}

func (t moeTable) Rows() [][]string {
	var rows [][]string
	for _, r := range t.Results {
		k := r.Kernel
		rows = append(rows, []string{r.Family, string(r.Backend), string(r.Precision), strings.Join(r.Systems, ","),
			fmt.Sprint(k.Rows), fmt.Sprint(r.HeldOut.N), pct(r.Dense.MAPEPct), pct(r.HeldOut.MAPEPct), fmt.Sprintf("%+.1f%%", r.HeldOut.BiasPct), pct(r.Table.MAPEPct),
			bySystem(r.Systems, r.BySystem), fmt.Sprint(r.SkewedEPBusiestRank.N), skewedPct(r.SkewedEPMeanRank), skewedPct(r.SkewedEPBusiestRank), fmt.Sprintf("%.3f", k.Compute), fmt.Sprintf("%.3f", k.Bandwidth), fmt.Sprintf("%.1f", k.RowsHalf), fmt.Sprintf("%.1f", k.LaunchUs)})
	}
	return rows
}

// skewedPct is a skewed-row score with its median bias, "-" without rows.
func skewedPct(s kernels.Score) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%+.0f%%)", pct(s.MAPEPct), s.BiasPct)
}

// bySystem lists each held-out system's MAPE.
func bySystem(systems []string, scores map[string]kernels.Score) string {
	var by []string
	for _, s := range systems {
		if sc, ok := scores[s]; ok {
			by = append(by, fmt.Sprintf("%s %.1f%%", s, sc.MAPEPct))
		}
	}
	return strings.Join(by, " ")
}

// gemmTable reports the dense GEMM summaries per family.
type gemmTable struct {
	Results []kernels.GEMMResult `json:"gemm"`
}

func (t gemmTable) Header() []string {
	return []string{"FAMILY", "SYSTEMS", "ROWS", "PRECISION", "HELD OUT", "MAPE FITTED", "BIAS", "MAPE EMBEDDED BEFORE", "BY SYSTEM", "EFFICIENCY", "BANDWIDTH", "CALL US"}
}

func (t gemmTable) Rows() [][]string {
	var rows [][]string
	for _, r := range t.Results {
		e := "-"
		if r.Embedded != nil {
			e = pct(r.Embedded.MAPEPct)
		}
		rows = append(rows, []string{r.Family, strings.Join(r.Systems, ","), fmt.Sprint(r.Rows), string(r.Precision), fmt.Sprint(r.HeldOut.N),
			pct(r.HeldOut.MAPEPct), fmt.Sprintf("%+.1f%%", r.HeldOut.BiasPct), e, bySystem(r.Systems, r.BySystem),
			fmt.Sprintf("%.3f", r.Summary.Efficiency), fmt.Sprintf("%.3f", r.Summary.Bandwidth), fmt.Sprintf("%.1f", r.Summary.CallUs)})
	}
	return rows
}

// kernelsReport is what calibrate kernels fitted.
type kernelsReport struct {
	GEMM      []kernels.GEMMResult `json:"gemm,omitempty"`
	Attention []kernels.AttnResult `json:"attention,omitempty"`
	MoE       []kernels.MoEResult  `json:"moe,omitempty"`
	// DSA holds the sparse-attention indexer costs.
	DSA        []kernels.IndexerResult `json:"dsa,omitempty"`
	DSAPrefill []kernels.PrefillResult `json:"dsa_prefill,omitempty"`
}

func newCalibrateKernelsCmd(g *globals) *cobra.Command {
	var out, only string
	cmd := &cobra.Command{
		Use:   "kernels",
		Short: "Fit the embedded kernel summaries (dense GEMMs and attention per architecture; fused MoE per architecture, backend and precision; the sparse-attention indexer) to measured kernel tables",
		Long: `Reads the GEMM tables (gemm_perf), the attention tables (context_attention_perf,
generation_attention_perf) and the fused-MoE tables (moe_perf) of a kernel tree and fits the
numbers the performance model prices them with. Nothing here sees an end-to-end serving run.

Dense GEMMs, per GPU architecture over every backend's tables, at model-layer sizes (n and k of at
least 1024): the fraction of tensor peak per compute precision, the fraction of memory bandwidth
weight streaming reaches, and the least time one GEMM call takes. Attention, per architecture over
every backend's full-attention tables: the fraction of BF16 peak prefill attention reaches, the
fraction of bandwidth decode attention streams the KV cache at, and the least time of one prefill
and one decode call (decode tables that stream faster than the GPU can, or slower than a quarter of
it, are left out, as perf leaves them out when it prices from tables). Routed experts, per architecture,
backend and weight precision: the fraction of tensor peak, the fraction of memory bandwidth, the
rows per expert at half speed and a fixed cost per call. DeepSeek sparse attention's indexer, per
architecture and backend (dsa_generation_module_perf beside mla_generation_module_perf): the
median time the DSA attention block takes over the MLA block of the same shape, at 16 sequences or
fewer and contexts its top-k covers; a backend with only the DSA block table gets the family's
median share of the block that the indexer takes where both were measured.

Each summary is validated twice: one table row in ten is held out and predicted by a fit on the
rest (next to the same rows priced by the parameters in use), and for architectures measured on
several systems each system is predicted by a fit on the others. Each MoE summary is also scored
on the table's skewed expert-parallel rows (power-law routing, whole experts on each GPU, 64 tokens
or fewer; never fitted), priced at the mean rank and at the busiest rank, as serving prices expert
parallelism. With --out it writes the
parameters (--params, or the embedded ones) with the summaries in; --only gemm, --only attention,
--only moe or --only dsa fits one kind.

  gpuplane calibrate kernels --kernels ../shared/reference/kernels --only gemm
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
			if only != "" && only != "gemm" && only != "attention" && only != "moe" && only != "dsa" {
				return fmt.Errorf("--only: %q is not gemm, attention, moe or dsa; leave it out to fit all four", only)
			}
			params := env.Params.Clone()
			params.Kernels = nil
			var rep kernelsReport
			if only == "" || only == "gemm" {
				if rep.GEMM, err = fitGEMMFamilies(g, env.Catalog, params, only == "gemm"); err != nil {
					return err
				}
			}
			if only == "" || only == "attention" {
				if rep.Attention, err = fitAttentionFamilies(g, env.Catalog, params, only == "attention"); err != nil {
					return err
				}
			}
			if only == "" || only == "dsa" {
				if rep.DSA, rep.DSAPrefill, err = fitIndexerFamilies(g, env.Catalog, params, only == "dsa"); err != nil {
					return err
				}
			}
			var groups []kernels.MoEGroup
			var gpus map[string]*catalog.GPU
			if only == "" || only == "moe" {
				if groups, gpus, err = moeGroups(g.kernelsDir, env.Catalog); err != nil {
					return err
				}
			}
			var t moeTable
			for i, grp := range groups {
				if len(grp.Rows) < kernels.MinMoERows {
					fmt.Fprintf(g.stderr, "[%d/%d] %s/%s/%s: %d rows, fewer than %d: no summary (experts stay priced as dense GEMMs)\n",
						i+1, len(groups), grp.Family, grp.Backend, grp.Precision, len(grp.Rows), kernels.MinMoERows)
					continue
				}
				fmt.Fprintf(g.stderr, "[%d/%d] %s/%s/%s: %d rows\n", i+1, len(groups), grp.Family, grp.Backend, grp.Precision, len(grp.Rows))
				fam := params.Families[grp.Family]
				res, err := kernels.ValidateMoE(grp, fam, gpus[grp.Family].ComputePrecision(perf.MoEWeights(grp.Precision)))
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
			rep.MoE = t.Results
			if out != "" {
				params.Source = "kernel summaries fitted by gpuplane calibrate kernels; " + params.Source
				if err := writeParams(g, out, params); err != nil {
					return err
				}
			}
			f, err := g.format()
			if err != nil {
				return err
			}
			if f != output.Table {
				return output.Write(g.stdout, f, rep)
			}
			var tables []output.Tabular
			if rep.GEMM != nil {
				tables = append(tables, gemmTable{rep.GEMM})
			}
			if rep.Attention != nil {
				tables = append(tables, attnTable{rep.Attention})
			}
			if rep.MoE != nil {
				tables = append(tables, t)
			}
			if rep.DSA != nil {
				tables = append(tables, indexerTable{rep.DSA})
			}
			if rep.DSAPrefill != nil {
				tables = append(tables, indexerPrefillTable{rep.DSAPrefill})
			}
			for i, tb := range tables {
				if i > 0 {
					fmt.Fprintln(g.stdout)
				}
				if err := output.WriteTable(g.stdout, tb); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the parameters with the fitted summaries to this file")
	cmd.Flags().StringVar(&only, "only", "", "fit one kind of summary: gemm, attention, moe or dsa (default: all four)")
	return cmd
}

// fitGEMMFamilies fits every architecture's dense GEMM summary to the GEMM
// tables of its catalog systems, all backends pooled (the model's GEMM
// efficiencies are per architecture), and sets them in params.
// With required unset, a tree without GEMM tables is reported, not an error.
func fitGEMMFamilies(g *globals, cat *catalog.Catalog, params *perf.Params, required bool) ([]kernels.GEMMResult, error) {
	type famPrec struct {
		fam  string
		prec catalog.Precision
	}
	groups := map[famPrec][]kernels.GEMMRow{}
	err := forEachKernelSet(g, cat, func(gpu *catalog.GPU, set *kernels.Set) {
		for _, r := range kernels.GEMMRows(set, gpu) {
			k := famPrec{gpu.Architecture, r.Precision}
			groups[k] = append(groups[k], r)
		}
	})
	if err != nil {
		return nil, err
	}
	keys := make([]famPrec, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].fam != keys[j].fam {
			return keys[i].fam < keys[j].fam
		}
		return keys[i].prec < keys[j].prec
	})
	if len(keys) == 0 {
		if required {
			return nil, fmt.Errorf("--kernels %s: no layer-sized gemm_perf rows for a catalog GPU", g.kernelsDir)
		}
		fmt.Fprintf(g.stderr, "gemm: no layer-sized gemm_perf rows for a catalog GPU; GEMM efficiencies kept\n")
		return nil, nil
	}
	var out []kernels.GEMMResult
	for i, k := range keys {
		rows := groups[k]
		if len(rows) < kernels.MinGEMMRows {
			fmt.Fprintf(g.stderr, "[%d/%d] gemm %s/%s: %d rows, fewer than %d: efficiency kept\n", i+1, len(keys), k.fam, k.prec, len(rows), kernels.MinGEMMRows)
			continue
		}
		fmt.Fprintf(g.stderr, "[%d/%d] gemm %s/%s: %d rows\n", i+1, len(keys), k.fam, k.prec, len(rows))
		fp := params.Families[k.fam]
		var cur *kernels.GEMMSummary
		if fp != nil {
			cur = &kernels.GEMMSummary{Efficiency: fp.GEMM[k.prec], Bandwidth: fp.GEMMBandwidthFor(k.prec), CallUs: fp.GEMMCallUs[k.prec]}
		}
		res, err := kernels.ValidateGEMM(k.fam, rows, cur)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
		if fp == nil {
			continue
		}
		setGEMMSummary(fp, k.prec, res.Summary)
	}
	return out, nil
}

// forEachKernelSet calls fn with every catalog system's table set under
// every serving backend the tree has, read through the --kernels library
// so that a second run reads the parsed tables from --kernels-cache.
func forEachKernelSet(g *globals, cat *catalog.Catalog, fn func(*catalog.GPU, *kernels.Set)) error {
	systems, err := kernels.Systems(g.kernelsDir)
	if err != nil {
		return err
	}
	for _, s := range systems {
		gpu, err := cat.GPU(s)
		if err != nil {
			continue // a system outside the catalog: nothing to price with it
		}
		backends, err := kernels.Backends(g.kernelsDir, s)
		if err != nil {
			return err
		}
		for _, b := range backends {
			be, err := perf.ParseBackend(b)
			if err != nil {
				continue // collectives only (nccl)
			}
			set, err := g.kernels.Set(gpu.Name, be)
			if err != nil {
				return err
			}
			if set != nil {
				fn(gpu, set)
			}
		}
	}
	return nil
}

// setGEMMSummary puts one precision's fitted summary in a family's
// parameters (a clone of the loaded ones); BF16's bandwidth is also the
// family's default.
func setGEMMSummary(fp *perf.FamilyParams, p catalog.Precision, s kernels.GEMMSummary) {
	// The model takes at most the spec sheet: a table faster than that
	// (a catalog figure below the part's) prices at the sheet.
	s.Efficiency, s.Bandwidth = min(1, s.Efficiency), min(1, s.Bandwidth)
	if fp.GEMMCallUs == nil {
		fp.GEMMCallUs = map[catalog.Precision]float64{}
	}
	if fp.GEMMPrecisionBandwidth == nil {
		fp.GEMMPrecisionBandwidth = map[catalog.Precision]float64{}
	}
	fp.GEMM[p], fp.GEMMCallUs[p] = s.Efficiency, s.CallUs
	if p == catalog.BF16 {
		fp.GEMMBandwidth = s.Bandwidth
		delete(fp.GEMMPrecisionBandwidth, p)
	} else {
		fp.GEMMPrecisionBandwidth[p] = s.Bandwidth
	}
}

// moeGroups reads every catalog system's fused-MoE tables and groups them
// by architecture, backend and summary key (the weight precision, or
// perf.MXFP4 for MXFP4 experts); gpus gives one catalog GPU per
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
			skewed, err := kernels.LoadMoESkewedEP(dir, s, b)
			if err != nil {
				return nil, nil, err
			}
			group := func(p catalog.Precision) *kernels.MoEGroup {
				key := arch + "/" + b + "/" + string(p)
				if byKey[key] == nil {
					byKey[key] = &kernels.MoEGroup{Family: arch, Backend: be, Precision: p}
				}
				return byKey[key]
			}
			for _, r := range rows {
				g := group(r.Key())
				g.Rows = append(g.Rows, r)
			}
			for _, r := range skewed {
				g := group(r.Key())
				g.SkewedEP = append(g.SkewedEP, r)
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
