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
	var all []Accuracy
	eachTableSet(t, dir, func(sys, be string) {
		s, held, err := LoadHoldingOut(dir, sys, be, EveryNth(10))
		if err != nil {
			t.Fatalf("%s/%s: %v", sys, be, err)
		}
		if len(s.Dropped) > 0 {
			t.Logf("%-9s %-7s dropped as faster than the roofline: %v", sys, be, s.Dropped)
		}
		if len(s.Skipped) > 0 {
			t.Logf("%-9s %-7s left out: %v", sys, be, s.Skipped)
		}
		if len(s.Stalled) > 0 {
			t.Logf("%-9s %-7s dropped as stalls: %v", sys, be, s.Stalled)
		}
		for _, a := range Evaluate(s, held) {
			t.Logf("%-9s %-7s %-21s n=%5d missed=%2d MAPE %5.1f%% median %4.1f%% p90 %5.1f%% bias %+5.1f%%",
				sys, be, a.Op, a.N, a.Missed, a.MAPE, a.Median, a.P90, a.Bias)
			if a.N >= 30 && a.MAPE > 15 {
				t.Errorf("%s/%s %s: held-out MAPE %.1f%%, want <= 15%%", sys, be, a.Op, a.MAPE)
			}
			all = append(all, a)
		}
	})
	for _, op := range []string{OpGEMM, OpContextAttention, OpGenerationAttention, OpContextMLA, OpGenerationMLA, OpGDN, OpAllReduce} {
		p := Pool(op, all)
		t.Logf("pooled %-21s n=%6d MAPE %5.1f%% bias %+5.1f%%", op, p.N, p.MAPE, p.Bias)
		if p.N == 0 || p.MAPE > 10 {
			t.Errorf("%s: pooled held-out MAPE %.1f%% over %d rows, want <= 10%%", op, p.MAPE, p.N)
		}
	}
}

// The fused-MoE tables answer their own held-out rows the same way: one
// row in ten held out by a hash, predicted by interpolation over the rest
// along the tokens within the model's shape class. Pooled within 10%, no
// table with 30 or more held-out rows worse than 15%.
func TestHeldOutMoERows(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	var all []Accuracy
	hold := EveryNth(10)
	eachTableSet(t, dir, func(sys, be string) {
		rows, err := LoadMoE(dir, sys, be)
		if err != nil {
			t.Fatalf("%s/%s: %v", sys, be, err)
		}
		if len(rows) == 0 {
			return
		}
		var held []Sample
		s := &Set{System: sys, Backend: be}
		s.moeOnce.Do(func() {}) // the grids below stand for the table
		s.moeGrid = moeGrids(rows, func(smp Sample) bool {
			if hold(smp) {
				held = append(held, smp)
				return false
			}
			return true
		})
		for _, a := range Evaluate(s, held) {
			t.Logf("%-9s %-7s %-4s n=%5d missed=%3d MAPE %5.1f%% median %4.1f%% p90 %5.1f%% bias %+5.1f%%",
				sys, be, a.Op, a.N, a.Missed, a.MAPE, a.Median, a.P90, a.Bias)
			if a.N >= 30 && a.MAPE > 15 {
				t.Errorf("%s/%s moe: held-out MAPE %.1f%%, want <= 15%%", sys, be, a.MAPE)
			}
			all = append(all, a)
		}
	})
	p := Pool(OpMoE, all)
	t.Logf("pooled moe n=%d MAPE %.1f%% bias %+.1f%%", p.N, p.MAPE, p.Bias)
	if p.N < 1000 || p.MAPE > 10 {
		t.Errorf("moe: pooled held-out MAPE %.1f%% over %d rows, want <= 10%% over at least 1000", p.MAPE, p.N)
	}
}

// eachTableSet calls fn for every system and backend of the kernel tree.
func eachTableSet(t *testing.T, dir string, fn func(system, backend string)) {
	t.Helper()
	systems, err := Systems(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, sys := range systems {
		backends, err := Backends(dir, sys)
		if err != nil {
			t.Fatal(err)
		}
		for _, be := range backends {
			fn(sys, be)
		}
	}
}
