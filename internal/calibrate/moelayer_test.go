package calibrate

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// The per-architecture layer cost touches only its architecture's entry:
// 0 removes it and leaves the others, and the search runs on that
// architecture's MoE runs alone.
func TestMoEArchLayerTerm(t *testing.T) {
	term := MoEArchLayerTerm(catalog.Hopper)
	bp := &perf.BackendParams{MoELayerUsByArch: map[string]float64{catalog.Blackwell: 7}}
	term.Set(bp, 15)
	if bp.MoELayerUsByArch[catalog.Hopper] != 15 || bp.MoELayerUsByArch[catalog.Blackwell] != 7 {
		t.Errorf("set 15: %v", bp.MoELayerUsByArch)
	}
	term.Set(bp, 0)
	if _, ok := bp.MoELayerUsByArch[catalog.Hopper]; ok || bp.MoELayerUsByArch[catalog.Blackwell] != 7 {
		t.Errorf("set 0: %v; want hopper's entry gone, blackwell's kept", bp.MoELayerUsByArch)
	}
	only := &perf.BackendParams{}
	term.Set(only, 0)
	if only.MoELayerUsByArch != nil {
		t.Errorf("0 on no entries: %v; want none", only.MoELayerUsByArch)
	}

	ds, env := loadShared(t)
	hopper := MoEArchCases(ds.Cases, env.Catalog, catalog.Hopper)
	if len(hopper) == 0 {
		t.Skip("the shared data has no Hopper MoE serving runs")
	}
	for _, c := range hopper {
		g, err := env.Catalog.GPU(c.System)
		if err != nil || g.Architecture != catalog.Hopper || c.Dense || c.Source != "silicon" {
			t.Fatalf("MoEArchCases(hopper) gave %s (%s, dense %v, %s)", c.ID, c.System, c.Dense, c.Source)
		}
	}
	res, err := FitTerm(env, firstPerBackend(hopper, 3), term, []float64{0, 20, 60}, []string{"model"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTermWrites(t, res, env, func(bp *perf.BackendParams) float64 { return bp.MoELayerUsByArch[catalog.Hopper] })
	// On Blackwell runs a Hopper cost changes nothing, so none is picked.
	bw, err := FitTerm(env, firstPerBackend(MoEArchCases(ds.Cases, env.Catalog, catalog.Blackwell), 3), term, []float64{0, 60}, []string{"model"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for b, v := range bw.Picked {
		if v != 0 {
			t.Errorf("Blackwell runs: %s picked a Hopper cost of %g us, which cannot change them", b, v)
		}
	}
	if _, err := FitTerm(env, nil, term, []float64{0}, []string{"model"}, nil); err == nil || !strings.Contains(err.Error(), "no measured MoE serving runs on hopper GPUs") {
		t.Errorf("no cases: %v", err)
	}
}
