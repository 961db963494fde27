package cli

import (
	"fmt"
	"strings"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/kernels"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// indexerTable reports the sparse-attention indexer costs.
type indexerTable struct {
	Results []kernels.IndexerResult `json:"dsa"`
}

func (t indexerTable) Header() []string {
	return []string{"FAMILY", "BACKEND", "FROM", "SYSTEMS", "INDEXER US", "HELD OUT", "MAPE"}
}

func (t indexerTable) Rows() [][]string {
	var rows [][]string
	for _, r := range t.Results {
		from := "dsa - mla blocks"
		if !r.Measured {
			from = fmt.Sprintf("dsa block x %.2f share", r.Share)
		}
		mape := "-"
		if r.HeldOut.N > 0 {
			mape = pct(r.HeldOut.MAPEPct)
		}
		rows = append(rows, []string{r.Family, r.Backend, from, strings.Join(r.Systems, ","), fmt.Sprintf("%.1f", r.Us), fmt.Sprint(r.HeldOut.N), mape})
	}
	return rows
}

// fitIndexerFamilies takes each architecture's and backend's sparse
// attention indexer costs, decode and prompt, from the attention-block
// tables of its catalog systems and sets them in params. With required
// unset, a tree without DSA block tables is reported, not an error.
func fitIndexerFamilies(g *globals, cat *catalog.Catalog, params *perf.Params, required bool) ([]kernels.IndexerResult, []kernels.PrefillResult, error) {
	systems, err := kernels.Systems(g.kernelsDir)
	if err != nil {
		return nil, nil, err
	}
	var samples []kernels.IndexerSample
	var prefill []kernels.PrefillExcess
	family := map[string]string{}
	for _, s := range systems {
		gpu, err := cat.GPU(s)
		if err != nil {
			continue // a system outside the catalog: nothing to price with it
		}
		family[s] = gpu.Architecture
		backends, err := kernels.Backends(g.kernelsDir, s)
		if err != nil {
			return nil, nil, err
		}
		var engines []string
		for _, b := range backends {
			if _, err := perf.ParseBackend(b); err != nil {
				continue
			}
			engines = append(engines, b)
			smp, err := kernels.ReadIndexer(g.kernelsDir, s, b)
			if err != nil {
				return nil, nil, fmt.Errorf("dsa: %s/%s: %w", s, b, err)
			}
			samples = append(samples, smp)
		}
		rows, err := kernels.ReadPrefillExcess(g.kernelsDir, s, engines)
		if err != nil {
			return nil, nil, fmt.Errorf("dsa: %s: %w", s, err)
		}
		prefill = append(prefill, rows...)
	}
	res := kernels.FitIndexer(samples, func(s string) string { return family[s] })
	pre, err := kernels.FitSparsePrefillFamilies(prefill, func(s string) string { return family[s] })
	if err != nil {
		return nil, nil, fmt.Errorf("dsa prefill: %w", err)
	}
	for _, r := range pre {
		fp := params.Families[r.Family]
		if fp == nil {
			continue
		}
		if fp.SparsePrefill == nil {
			fp.SparsePrefill = map[perf.Backend]*perf.SparsePrefillCost{}
		}
		be, _ := perf.ParseBackend(r.Backend)
		fp.SparsePrefill[be] = &perf.SparsePrefillCost{CallUs: r.Cost.CallUs, TokenUs: r.Cost.TokenUs, PairPs: r.Cost.PairPs}
	}
	if len(res) == 0 && len(pre) == 0 && required {
		return nil, nil, fmt.Errorf("--kernels %s: no dsa_generation_module_perf rows of %d sequences or fewer and contexts of %d tokens or fewer, and no dsa_context_module_perf rows beside an MLA block table: no indexer cost to take", g.kernelsDir, kernels.IndexerMaxBatch, kernels.IndexerMaxSeq)
	}
	for _, r := range res {
		fp := params.Families[r.Family]
		if fp == nil {
			continue
		}
		if fp.SparseIndexerUs == nil {
			fp.SparseIndexerUs = map[perf.Backend]float64{}
		}
		be, _ := perf.ParseBackend(r.Backend)
		fp.SparseIndexerUs[be] = r.Us
	}
	return res, pre, nil
}

// indexerPrefillTable reports the prompt-side indexer costs.
type indexerPrefillTable struct {
	Results []kernels.PrefillResult `json:"dsa_prefill"`
}

func (t indexerPrefillTable) Header() []string {
	return []string{"FAMILY", "BACKEND", "MLA BLOCK", "SYSTEMS", "ROWS", "CALL US", "TOKEN US", "PAIR PS", "HELD OUT", "MAPE", "BY SYSTEM"}
}

func (t indexerPrefillTable) Rows() [][]string {
	var rows [][]string
	for _, r := range t.Results {
		base := "own"
		if r.Borrowed {
			base = "fastest other backend's"
		}
		mape := "-"
		if r.HeldOut.N > 0 {
			mape = pct(r.HeldOut.MAPEPct)
		}
		rows = append(rows, []string{r.Family, r.Backend, base, strings.Join(r.Systems, ","), fmt.Sprint(r.Rows),
			fmt.Sprintf("%.1f", r.Cost.CallUs), fmt.Sprintf("%.3f", r.Cost.TokenUs), fmt.Sprintf("%.1f", r.Cost.PairPs),
			fmt.Sprint(r.HeldOut.N), mape, bySystem(r.Systems, r.BySystem)})
	}
	return rows
}
