package engine

import (
	"maps"
	"math"
	"testing"
)

type fakeRank struct{ waiting, prefilling, decoding int }

func (r *fakeRank) Waiting() int    { return r.waiting }
func (r *fakeRank) Prefilling() int { return r.prefilling }
func (r *fakeRank) Decoding() int   { return r.decoding }

func TestBalanceHolds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ranks []fakeRank // rank 0 asks
		holds int        // consecutive holds before a release
	}{
		{"a rank with nothing to decode: start at once", []fakeRank{{1, 0, 4}, {0, 0, 0}}, 0},
		{"every rank has a prompt: start together", []fakeRank{{1, 0, 4}, {2, 0, 4}, {0, 1, 4}}, 0},
		{"every rank decoding, one without a prompt: hold to the timeout", []fakeRank{{1, 0, 4}, {0, 0, 4}}, 3},
		{"a prompt still prefilling on the other rank counts", []fakeRank{{1, 0, 4}, {0, 1, 4}}, 0},
	} {
		g := NewBalance(3)
		for i := range tc.ranks {
			g.ranks = append(g.ranks, &tc.ranks[i])
		}
		asker := g.ranks[0]
		// Two rounds: the count starts again after a release.
		for round := 0; round < 2; round++ {
			for i := 0; i < tc.holds; i++ {
				if !g.hold(asker) {
					t.Fatalf("%s: round %d: released after %d holds, want %d", tc.name, round, i, tc.holds)
				}
			}
			if g.hold(asker) {
				t.Fatalf("%s: round %d: still holding after %d holds", tc.name, round, tc.holds)
			}
		}
	}
}

// What the balance says of how long its answer lasts matches asking it
// iteration by iteration, and skipping that many iterations brings the
// next answer on time: what lets a lockstep group fast-forward past it.
func TestBalanceSteadyMatchesAsking(t *testing.T) {
	for _, ranks := range [][]fakeRank{
		{{1, 0, 4}, {0, 0, 0}},
		{{1, 0, 4}, {2, 0, 4}},
		{{1, 0, 4}, {0, 0, 4}},
		{{1, 0, 4}, {0, 0, 4}, {0, 1, 4}},
	} {
		for _, timeout := range []int{1, 3, 7} {
			g := NewBalance(timeout)
			for i := range ranks {
				g.ranks = append(g.ranks, &ranks[i])
			}
			asker := g.ranks[0]
			for ask := 0; ask < 3*timeout+3; ask++ {
				answer := g.hold(asker)
				said := g.steady(asker)
				// Ask a copy until the answer changes (200 asks: never).
				probe := &Balance{ranks: g.ranks, timeout: timeout, waited: maps.Clone(g.waited)}
				same := int64(1)
				for same < 200 && probe.hold(asker) == answer {
					same++
				}
				if same == 200 {
					same = math.MaxInt64
				}
				if said != same {
					t.Fatalf("ranks %v, timeout %d, ask %d (answer %v): steady says %d iterations, asking gives %d", ranks, timeout, ask, answer, said, same)
				}
				if said > 1 && said < math.MaxInt64 {
					skipped := &Balance{ranks: g.ranks, timeout: timeout, waited: maps.Clone(g.waited)}
					skipped.skip(asker, said-1)
					if skipped.hold(asker) == answer {
						t.Fatalf("ranks %v, timeout %d, ask %d: after skipping %d iterations the answer is still %v", ranks, timeout, ask, said-1, answer)
					}
				}
			}
		}
	}
}
