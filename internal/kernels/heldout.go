package kernels

import (
	"fmt"
	"sort"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// SetAccuracy is how well one system's tables under one backend answer
// their held-out rows of one operation kind.
type SetAccuracy struct {
	System  string `json:"system"`
	Backend string `json:"backend"`
	Accuracy
	// Dropped, Stalled and Skipped are the set's rows kept out of every
	// table (see Set), by operation kind or reason.
	Dropped map[string]int `json:"dropped,omitempty"`
	Stalled map[string]int `json:"stalled,omitempty"`
	Skipped map[string]int `json:"skipped,omitempty"`
}

// TreeAccuracy is a kernel tree's tables tested on their own rows: per set
// and operation kind, and pooled per kind over every set.
type TreeAccuracy struct {
	HoldOneIn int           `json:"holdOneIn"`
	Sets      []SetAccuracy `json:"sets"`
	Pooled    []Accuracy    `json:"pooled"`
}

// Ops lists the operation kinds the tables answer, in report order.
var Ops = []string{OpGEMM, OpContextAttention, OpGenerationAttention, OpContextMLA, OpGenerationMLA, OpGDN, OpAllReduce, OpMoE}

// EvaluateTree holds out about one row in n of every table of every system
// and backend (picked by a hash of the row, so the same on every run),
// answers them from the rest and scores the answers (Evaluate). progress,
// if set, is told of each set before it is read.
func EvaluateTree(dir string, n int, progress func(i, total int, system, backend string)) (*TreeAccuracy, error) {
	if n < 2 {
		return nil, fmt.Errorf("hold one row in %d: want 2 or more (one in 10 is usual)", n)
	}
	systems, err := Systems(dir)
	if err != nil {
		return nil, err
	}
	type pair struct{ system, backend string }
	var sets []pair
	for _, sys := range systems {
		backends, err := Backends(dir, sys)
		if err != nil {
			return nil, err
		}
		for _, be := range backends {
			sets = append(sets, pair{sys, be})
		}
	}
	hold := EveryNth(n)
	out := &TreeAccuracy{HoldOneIn: n}
	var all []Accuracy
	for i, p := range sets {
		if progress != nil {
			progress(i+1, len(sets), p.system, p.backend)
		}
		s, held, err := LoadHoldingOut(dir, p.system, p.backend, hold)
		if err != nil {
			return nil, err
		}
		moe, err := heldOutMoE(dir, p.system, p.backend, hold)
		if err != nil {
			return nil, err
		}
		if moe != nil {
			s.moeOnce.Do(func() {}) // the held-out grids stand for the table
			s.moeGrid = moe.grids
			held = append(held, moe.held...)
		}
		for _, a := range Evaluate(s, held) {
			out.Sets = append(out.Sets, SetAccuracy{System: p.system, Backend: p.backend, Accuracy: a,
				Dropped: s.Dropped, Stalled: s.Stalled, Skipped: s.Skipped})
			all = append(all, a)
		}
	}
	for _, op := range Ops {
		if p := Pool(op, all); p.N > 0 || p.Missed > 0 {
			out.Pooled = append(out.Pooled, p)
		}
	}
	sort.SliceStable(out.Sets, func(i, j int) bool { return opRank(out.Sets[i].Op) < opRank(out.Sets[j].Op) })
	return out, nil
}

func opRank(op string) int {
	for i, o := range Ops {
		if o == op {
			return i
		}
	}
	return len(Ops)
}

type moeHeldOut struct {
	grids map[catalog.Precision]*Grid
	held  []Sample
}

// heldOutMoE builds a set's fused-MoE grids without the rows hold picks,
// and returns those rows (nil: the set has no MoE table).
func heldOutMoE(dir, system, backend string, hold func(Sample) bool) (*moeHeldOut, error) {
	rows, err := LoadMoE(dir, system, backend)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	out := &moeHeldOut{}
	out.grids = moeGrids(rows, func(smp Sample) bool {
		if hold(smp) {
			out.held = append(out.held, smp)
			return false
		}
		return true
	})
	return out, nil
}
