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
	// Summarise computes the MAPEs; each harness gets one summary.
	byGroup := map[string]*HarnessGroup{}
	measured := map[string]int{} // rows with a TTFT prediction, per group
	for _, h := range serving.Harnesses {
		sum := Summarise(PredictWith(env, dense, h), 0)
		rep.Overall[string(h)] = sum.DenseAgg.TTFTMAPE
		for _, st := range sum.Groups {
			g := byGroup[st.Group]
			if g == nil {
				g = &HarnessGroup{Group: st.Group, N: st.N, TTFTMAPE: map[string]float64{}}
				byGroup[st.Group] = g
				measured[st.Group] = st.nTTFT
			}
			g.TTFTMAPE[string(h)] = st.TTFTMAPE
			if g.Best == "" || st.TTFTMAPE < g.TTFTMAPE[g.Best] {
				g.Best = string(h)
			}
		}
	}
	var best float64
	var n int
	for _, g := range byGroup {
		best += g.TTFTMAPE[g.Best] * float64(measured[g.Group])
		n += measured[g.Group]
		rep.Groups = append(rep.Groups, *g)
	}
	if n > 0 {
		rep.BestPerGroup = best / float64(n)
	}
	sort.Slice(rep.Groups, func(i, j int) bool { return rep.Groups[i].Group < rep.Groups[j].Group })
	return rep
}
