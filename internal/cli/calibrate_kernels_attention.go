package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/kernels"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// attnTable reports the attention summaries per family.
type attnTable struct {
	Results []kernels.AttnResult `json:"attention"`
}

func (t attnTable) Header() []string {
	return []string{"FAMILY", "SYSTEMS", "PHASE", "ROWS", "HELD OUT", "MAPE FITTED", "BIAS", "MAPE EMBEDDED BEFORE", "BY SYSTEM", "COMPUTE", "BANDWIDTH", "CALL US", "SEQ US"}
}

func (t attnTable) Rows() [][]string {
	var rows [][]string
	for _, r := range t.Results {
		for _, ph := range []struct {
			name     string
			n        int
			held     kernels.Score
			embedded *kernels.Score
			by       map[string]kernels.Score
			compute  string
			bw, call float64
			seq      string
		}{
			{"prefill", r.Prefill, r.HeldOut.Prefill, nil, map[string]kernels.Score{}, fmt.Sprintf("%.3f", r.Summary.Compute), r.Summary.PrefillBandwidth, r.Summary.CallUs, "-"},
			{"decode", r.Decode, r.HeldOut.Decode, nil, map[string]kernels.Score{}, "-", r.Summary.Bandwidth, r.Summary.DecodeCallUs, fmt.Sprintf("%.3f", r.Summary.DecodeSeqUs)},
		} {
			if r.Embedded != nil {
				e := r.Embedded.Prefill
				if ph.name == "decode" {
					e = r.Embedded.Decode
				}
				ph.embedded = &e
			}
			for s, sc := range r.BySystem {
				ph.by[s] = sc.Prefill
				if ph.name == "decode" {
					ph.by[s] = sc.Decode
				}
			}
			e := "-"
			if ph.embedded != nil {
				e = pct(ph.embedded.MAPEPct)
			}
			rows = append(rows, []string{r.Family, strings.Join(r.Systems, ","), ph.name, fmt.Sprint(ph.n), fmt.Sprint(ph.held.N),
				pct(ph.held.MAPEPct), fmt.Sprintf("%+.1f%%", ph.held.BiasPct), e, bySystem(r.Systems, ph.by),
				ph.compute, fmt.Sprintf("%.3f", ph.bw), fmt.Sprintf("%.1f", ph.call), ph.seq})
		}
	}
	return rows
}

// fitAttentionFamilies fits every architecture's attention summary to the
// context- and generation-attention tables of its catalog systems, all
// backends pooled (the model's attention efficiencies are per
// architecture), and sets them in params. With required unset, a tree
// without attention tables is reported, not an error.
func fitAttentionFamilies(g *globals, cat *catalog.Catalog, params *perf.Params, required bool) ([]kernels.AttnResult, error) {
	groups := map[string][]kernels.AttnRow{}
	err := forEachKernelSet(g, cat, func(gpu *catalog.GPU, set *kernels.Set) {
		if rows := kernels.AttnRows(set, gpu); len(rows) > 0 {
			groups[gpu.Architecture] = append(groups[gpu.Architecture], rows...)
		}
	})
	if err != nil {
		return nil, err
	}
	fams := make([]string, 0, len(groups))
	for f := range groups {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	if len(fams) == 0 {
		if required {
			return nil, fmt.Errorf("--kernels %s: no full-attention context_attention or generation_attention rows for a catalog GPU", g.kernelsDir)
		}
		fmt.Fprintf(g.stderr, "attention: no attention rows for a catalog GPU; attention efficiencies kept\n")
		return nil, nil
	}
	var out []kernels.AttnResult
	for i, fam := range fams {
		rows := groups[fam]
		var prefill, decode int
		for _, r := range rows {
			if r.Decode {
				decode++
			} else {
				prefill++
			}
		}
		if prefill < kernels.MinAttnRows || decode < kernels.MinAttnRows {
			fmt.Fprintf(g.stderr, "[%d/%d] attention %s: %d prefill and %d decode rows, fewer than %d of each: efficiencies kept\n",
				i+1, len(fams), fam, prefill, decode, kernels.MinAttnRows)
			continue
		}
		fmt.Fprintf(g.stderr, "[%d/%d] attention %s: %d prefill and %d decode rows\n", i+1, len(fams), fam, prefill, decode)
		fp := params.Families[fam]
		var cur *kernels.AttnSummary
		if fp != nil {
			cur = &kernels.AttnSummary{Compute: fp.AttentionCompute, PrefillBandwidth: fp.AttentionPrefillBandwidth, CallUs: fp.AttentionCallUs,
				Bandwidth: fp.AttentionBandwidth, DecodeCallUs: fp.DecodeAttentionCallUs, DecodeSeqUs: fp.DecodeAttentionSeqUs}
		}
		res, err := kernels.ValidateAttention(fam, rows, cur)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
		if fp != nil {
			s := res.Summary
			// The model takes at most the spec sheet.
			fp.AttentionCompute, fp.AttentionPrefillBandwidth, fp.AttentionCallUs = min(1, s.Compute), min(1, s.PrefillBandwidth), s.CallUs
			fp.AttentionBandwidth, fp.DecodeAttentionCallUs, fp.DecodeAttentionSeqUs = min(1, s.Bandwidth), s.DecodeCallUs, s.DecodeSeqUs
		}
	}
	return out, nil
}
