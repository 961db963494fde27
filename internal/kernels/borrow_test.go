package kernels

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// A GPU without tables is priced from a measured GPU of its architecture,
// scaled to its peaks and bandwidth. Tried on GPUs that do have tables,
// each pair of one architecture answering the other's held-out rows. The
// Hopper pair shares SMs and differs in bandwidth by 1.43x, which the
// tables barely show: the scaling must not invent the difference. Pooled,
// the kinds stay near the tables' own held-out accuracy.
func TestBorrowedTablesAnswerANeighbour(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	cat := catalog.MustDefault()
	lib, err := Open(dir, func(system string) (*catalog.GPU, bool) {
		g, err := cat.GPU(system)
		return g, err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lib.CacheDir = t.TempDir()
	rep, err := lib.EvaluateBorrowed(10, nil)
	if err != nil {
		t.Fatal(err)
	}
	type sums struct {
		n             int
		scaled, plain float64
	}
	hopper := map[string]*sums{}
	for _, a := range rep.Pairs {
		t.Logf("%s from %s, %s %s: %d rows, MAPE scaled %.1f%%, unscaled %.1f%%", a.To, a.From, a.Backend, a.Op, a.N, a.MAPE, a.Unscaled)
		if g, _ := cat.GPU(a.To); g.Architecture == catalog.Hopper {
			s := hopper[a.Op]
			if s == nil {
				s = &sums{}
				hopper[a.Op] = s
			}
			s.n += a.N
			s.scaled += a.MAPE * float64(a.N)
			s.plain += a.Unscaled * float64(a.N)
		}
	}
	if len(hopper) == 0 {
		t.Fatal("no Hopper pair was tried")
	}
	for op, s := range hopper {
		sc, pl := s.scaled/float64(s.n), s.plain/float64(s.n)
		t.Logf("Hopper pairs %s: %d rows, MAPE scaled %.1f%%, unscaled %.1f%%", op, s.n, sc, pl)
		if sc > pl+1 {
			t.Errorf("Hopper pairs %s: scaled %.1f%% against %.1f%% unscaled", op, sc, pl)
		}
	}
	limit := map[string]float64{OpGEMM: 10, OpGenerationAttention: 20, OpGenerationMLA: 12, OpContextAttention: 25}
	for _, p := range rep.Pooled {
		t.Logf("pooled %s: %d rows, MAPE scaled %.1f%%, unscaled %.1f%%", p.Op, p.N, p.MAPE, p.Unscaled)
		if p.MAPE > limit[p.Op] {
			t.Errorf("pooled %s: scaled %.1f%%, above %.0f%%", p.Op, p.MAPE, limit[p.Op])
		}
	}
	if len(rep.Pooled) != len(borrowedOps) {
		t.Errorf("pooled kinds %d, want %d", len(rep.Pooled), len(borrowedOps))
	}
}
