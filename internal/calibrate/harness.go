package calibrate

import (
	"sort"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// HarnessGroup is the dense aggregated TTFT error of one (system, backend,
// model) group under each benchmark harness.
type HarnessGroup struct {
	Group    string             `json:"group"`
	N        int                `json:"n"`
	TTFTMAPE map[string]float64 `json:"ttft_mape_pct"`
	// Best is the harness with the lowest error for this group.
	Best string `json:"best"`
}

// HarnessReport compares harnesses on the dense aggregated rows. Overall
// holds each harness applied to every row, as a model must; BestPerGroup
// is what choosing the harness group by group would reach. That choice is
// made after seeing the errors, so it is a bound on what the data allows,
// not a model.
type HarnessReport struct {
	Groups       []HarnessGroup     `json:"groups"`
	Overall      map[string]float64 `json:"overall_ttft_mape_pct"`
	BestPerGroup float64            `json:"best_per_group_ttft_mape_pct"`
	N            int                `json:"n"`
}

// CompareHarnesses predicts the dense aggregated silicon rows under every
// harness, ignoring any a row declares, and reports TTFT MAPE per group and
// overall.
func CompareHarnesses(env estimate.Env, cases []Case) HarnessReport {
	var dense []Case
	for _, c := range cases {
		if c.Source == "silicon" && c.Mode == "agg" && c.Dense {
			c.Harness = "" // compare every harness, whatever a row declares
			dense = append(dense, c)
		}
	}
	rep := HarnessReport{Overall: map[string]float64{}, N: len(dense)}
	type acc struct {
		n   int
		sum map[string]float64
	}
	groups := map[string]*acc{}
	for _, h := range serving.Harnesses {
		var sum float64
		var n int
		for _, p := range PredictWith(env, dense, h) {
			if p.Err != "" {
				continue
			}
			a := groups[p.Group()]
			if a == nil {
				a = &acc{sum: map[string]float64{}}
				groups[p.Group()] = a
			}
			if h == serving.Harnesses[0] {
				a.n++
			}
			e := ape(p.PredTTFTms, p.TTFTms)
			a.sum[string(h)] += e
			sum += e
			n++
		}
		if n > 0 {
			rep.Overall[string(h)] = sum / float64(n)
		}
	}
	var best float64
	for name, a := range groups {
		g := HarnessGroup{Group: name, N: a.n, TTFTMAPE: map[string]float64{}}
		low := -1.0
		for _, h := range serving.Harnesses {
			m := a.sum[string(h)] / float64(a.n)
			g.TTFTMAPE[string(h)] = m
			if low < 0 || m < low {
				low, g.Best = m, string(h)
			}
		}
		best += a.sum[g.Best]
		rep.Groups = append(rep.Groups, g)
	}
	if rep.N > 0 {
		rep.BestPerGroup = best / float64(rep.N)
	}
	sort.Slice(rep.Groups, func(i, j int) bool { return rep.Groups[i].Group < rep.Groups[j].Group })
	return rep
}
