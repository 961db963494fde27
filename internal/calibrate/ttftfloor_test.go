package calibrate

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// The TTFT floor search over a few MoE runs of each backend: what it
// keeps is what it writes, and a grid of floors on dense runs changes
// nothing (their models have no MoE layers).
func TestFitTTFTFloor(t *testing.T) {
	ds, env := loadShared(t)
	var moe, dense []Case
	per := map[string]int{}
	for _, cs := range servingRuns(ds.Cases, func(Case) bool { return true }) {
		k := cs.Backend + map[bool]string{true: " dense", false: " moe"}[cs.Dense]
		if per[k] >= 3 {
			continue
		}
		per[k]++
		if cs.Dense {
			dense = append(dense, cs)
		} else {
			moe = append(moe, cs)
		}
	}
	if len(moe) == 0 || len(dense) == 0 {
		t.Skip("the shared data lacks MoE or dense serving runs")
	}
	for _, cs := range MoECases(moe) {
		if cs.Dense {
			t.Fatalf("MoECases gave dense run %s", cs.ID)
		}
	}
	res, err := FitTerm(env, MoECases(moe), TTFTFloorTerm, []float64{0, 8, 24}, []string{"model"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTermWrites(t, res, env, func(bp *perf.BackendParams) float64 { return bp.MoETTFTFloorExpertUs })
	d, err := FitTerm(env, dense, TTFTFloorTerm, []float64{0, 24}, []string{"model"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for b, v := range d.Picked {
		if v != 0 {
			t.Errorf("dense runs: %s picked a floor of %g us, which cannot change them", b, v)
		}
	}
	if _, err := FitTerm(env, nil, TTFTFloorTerm, []float64{0}, []string{"model"}, nil); err == nil || !strings.Contains(err.Error(), "MoE serving runs") {
		t.Errorf("no cases: %v", err)
	}
}
