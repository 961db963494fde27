package serving

import (
	"maps"
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

type fakeRank struct{ waiting, prefilling, decoding int }

func (r *fakeRank) Waiting() int    { return r.waiting }
func (r *fakeRank) Prefilling() int { return r.prefilling }
func (r *fakeRank) Decoding() int   { return r.decoding }

func TestADPBalanceHolds(t *testing.T) {
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
		g := newADPBalance(3)
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
func TestADPBalanceSteadyMatchesAsking(t *testing.T) {
	for _, ranks := range [][]fakeRank{
		{{1, 0, 4}, {0, 0, 0}},
		{{1, 0, 4}, {2, 0, 4}},
		{{1, 0, 4}, {0, 0, 4}},
		{{1, 0, 4}, {0, 0, 4}, {0, 1, 4}},
	} {
		for _, timeout := range []int{1, 3, 7} {
			g := newADPBalance(timeout)
			for i := range ranks {
				g.ranks = append(g.ranks, &ranks[i])
			}
			asker := g.ranks[0]
			for ask := 0; ask < 3*timeout+3; ask++ {
				answer := g.hold(asker)
				said := g.steady(asker)
				// Ask a copy until the answer changes (200 asks: never).
				probe := &adpBalance{ranks: g.ranks, timeout: timeout, waited: maps.Clone(g.waited)}
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
					skipped := &adpBalance{ranks: g.ranks, timeout: timeout, waited: maps.Clone(g.waited)}
					skipped.skip(asker, said-1)
					if skipped.hold(asker) == answer {
						t.Fatalf("ranks %v, timeout %d, ask %d: after skipping %d iterations the answer is still %v", ranks, timeout, ask, said-1, answer)
					}
				}
			}
		}
	}
}

// A TensorRT-LLM attention-DP deployment under load: the hold shows as
// TTFT and leaves decode alone; dp 1 and a backend without a hold are
// untouched.
func TestADPBalanceInEstimates(t *testing.T) {
	cat := catalog.MustDefault()
	m, err := cat.Model("deepseek-ai/DeepSeek-R1")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := cat.Device("b200_sxm", "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(be perf.Backend, dp, hold int) *Result {
		t.Helper()
		p := perf.MustDefaultParams().Clone()
		p.Backends[be].ADPBalanceIters = hold
		cfg := perf.Config{Model: m, Device: dev, Backend: be, Weights: catalog.FP4, KV: catalog.FP8, TP: 8 / dp, DP: dp, EP: 8}
		w, err := perf.NewWorker(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Aggregated(w, dp, Workload{ISL: 1024, OSL: 1024, Concurrency: 128}, Options{Harness: Burst})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	without := run(perf.TRTLLM, 8, 0)
	for _, hold := range []int{10, 20, 50} {
		with := run(perf.TRTLLM, 8, hold)
		t.Logf("hold %d: TTFT %.0f ms (without %.0f), TPOT %.1f ms (without %.1f)", hold, with.TTFTms, without.TTFTms, with.TPOTms, without.TPOTms)
		if !(with.TTFTms > 1.2*without.TTFTms) {
			t.Errorf("dp 8 TTFT %.0f ms with a %d-iteration hold, %.0f ms without: want the hold to show", with.TTFTms, hold, without.TTFTms)
		}
		if r := with.TPOTms / without.TPOTms; r < 0.9 || r > 1.1 {
			t.Errorf("dp 8 TPOT %.1f ms with a %d-iteration hold, %.1f without: the hold should leave decode steps alone", with.TPOTms, hold, without.TPOTms)
		}
	}
	if a, b := run(perf.TRTLLM, 1, 0), run(perf.TRTLLM, 1, 50); a.TTFTms != b.TTFTms || a.TPOTms != b.TPOTms {
		t.Errorf("dp 1: %.1f/%.1f ms with a hold, %.1f/%.1f without: want no change", b.TTFTms, b.TPOTms, a.TTFTms, a.TPOTms)
	}
}
