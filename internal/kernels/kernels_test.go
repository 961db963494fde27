package kernels

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// The tables answer measurements they never saw: one row in ten of every
// table is held out and predicted from the rest. Pooled over every system
// and backend, each operation kind is within 10% (MAPE); no single table
// with 30 or more held-out rows is worse than 15%.
func TestHeldOutKernelRows(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	acc, err := EvaluateTree(dir, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]bool{}
	for _, a := range acc.Sets {
		if set := a.System + "/" + a.Backend; !logged[set] {
			logged[set] = true
			t.Logf("%-9s %-7s dropped as faster than the roofline %v, as stalls %v, left out %v", a.System, a.Backend, a.Dropped, a.Stalled, a.Skipped)
		}
		t.Logf("%-9s %-7s %-21s n=%5d missed=%3d MAPE %5.1f%% median %4.1f%% p90 %5.1f%% bias %+5.1f%%",
			a.System, a.Backend, a.Op, a.N, a.Missed, a.MAPE, a.Median, a.P90, a.Bias)
		if a.N >= 30 && a.MAPE > 15 {
			t.Errorf("%s/%s %s: held-out MAPE %.1f%%, want <= 15%%", a.System, a.Backend, a.Op, a.MAPE)
		}
	}
	pooled := map[string]Accuracy{}
	for _, p := range acc.Pooled {
		pooled[p.Op] = p
	}
	for _, op := range Ops {
		p := pooled[op]
		t.Logf("pooled %-21s n=%6d MAPE %5.1f%% bias %+5.1f%%", op, p.N, p.MAPE, p.Bias)
		// Every kind within 10%; the fused-MoE tables over at least 1000 rows.
		if p.N == 0 || p.MAPE > 10 || op == OpMoE && p.N < 1000 {
			t.Errorf("%s: pooled held-out MAPE %.1f%% over %d rows, want <= 10%%", op, p.MAPE, p.N)
		}
	}
}
