package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Two attention-DP ranks in lockstep: while rank B prefills a long prompt
// in two chunks, rank A's iterations last as long as B's; afterwards both
// decode at their own pace again (one step each, together).
func TestLockstepStepsRanksTogether(t *testing.T) {
	cost := linearCost{base: 1e-3, perToken: 1e-5}
	chunk, decode := 1e-3+512e-5, 1e-3+1e-5
	for _, grouped := range []bool{false, true} {
		for _, ff := range []bool{false, true} {
			rec := newRecorder()
			cfg := Config{Role: Aggregated, MaxBatchedTokens: 512, MaxSeqs: 8, KVTokens: 100000, NoFastForward: !ff}
			a, _ := New(cfg, cost, rec)
			b, _ := New(cfg, cost, rec)
			steps := []Stepper{a, b}
			if grouped {
				steps = steps[:1]
				steps[0] = NewLockstep([]*Engine{a, b})
			}
			if err := a.Submit(&Request{ID: 1, ISL: 10, OSL: 20}, 0); err != nil {
				t.Fatal(err)
			}
			if err := b.Submit(&Request{ID: 2, ISL: 1024, OSL: 2}, 0); err != nil {
				t.Fatal(err)
			}
			for n := 0; ; n++ {
				next, idx := math.Inf(1), -1
				for i, st := range steps {
					if e := st.NextEvent(); e < next {
						next, idx = e, i
					}
				}
				if idx < 0 {
					break
				}
				if n > 1000 {
					t.Fatal("did not drain")
				}
				steps[idx].Advance()
			}
			first, done := 1e-3+10e-5, 1e-3+10e-5+19*decode
			if grouped {
				// A's prompt iteration and first decode step wait for B's chunks.
				first, done = chunk, 2*chunk+18*decode
			}
			if math.Abs(rec.first[1]-first) > 1e-12 || math.Abs(rec.done[1]-done) > 1e-12 {
				t.Errorf("grouped %v fast-forward %v: rank A's request first token %g, done %g; want %g, %g", grouped, ff, rec.first[1], rec.done[1], first, done)
			}
			if want := 2 * chunk; math.Abs(rec.first[2]-want) > 1e-12 {
				t.Errorf("grouped %v fast-forward %v: rank B's first token %g, want %g (its own two chunks)", grouped, ff, rec.first[2], want)
			}
		}
	}
}

// The closed-form run length is the sum over steps of the longest line,
// checked against summing step by step; integer lines make ties common.
func TestGroupRunEnvelopeOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 11))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.IntN(10)
		lines := make([]line, n)
		for i := range lines {
			if trial%2 == 0 {
				lines[i] = line{a: float64(rng.IntN(50)), b: float64(rng.IntN(6))}
			} else {
				lines[i] = line{a: 1e-3 + 1e-2*rng.Float64(), b: 1e-5 * rng.Float64()}
			}
		}
		steps := int64(1 + rng.IntN(400))
		run := &groupRun{}
		run.envelope(lines, steps)
		var sum float64
		for k := int64(1); k <= steps; k++ {
			longest := math.Inf(-1)
			for _, l := range lines {
				longest = max(longest, l.a+l.b*float64(k-1))
			}
			sum += longest
			if got := run.elapsed(k); math.Abs(got-sum) > 1e-9*math.Max(1, sum) {
				t.Fatalf("trial %d, lines %v: first %d steps take %g in closed form, %g step by step", trial, lines, k, got, sum)
			}
		}
		if len(run.seg) > n {
			t.Fatalf("trial %d: %d segments from %d lines", trial, len(run.seg), n)
		}
	}
}

// holdCycle holds waiting prompts three times out of four: a gate whose
// answer changes from one iteration to the next.
type holdCycle struct{ every, asked int }

func (h *holdCycle) HoldPrompts(*Engine) bool {
	h.asked++
	return h.asked%h.every != 0
}

// A lockstep group that fast-forwards gives every request the times the
// plain group loop gives it, with arrivals at any rank cutting runs, full
// caches, preemption and gates; and it takes far fewer advances.
func TestLockstepFastForwardMatchesPlain(t *testing.T) {
	var advFF, advPlain int
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		ranks := 1 + rng.IntN(5)
		cfg := Config{MaxBatchedTokens: 64 + rng.IntN(2048), MaxSeqs: 1 + rng.IntN(16), KVTokens: 4000 + rng.IntN(30000)}
		cost := linearCost{base: 1e-3 * rng.Float64(), perToken: 1e-5 * rng.Float64(), perCtx: 1e-7 * rng.Float64()}
		gated := seed%3 == 0
		type arrival struct {
			at             float64
			rank, isl, osl int
		}
		var arr []arrival
		at := 0.0
		for i := 0; i < 80; i++ {
			at += rng.ExpFloat64() * 0.03
			arr = append(arr, arrival{at, rng.IntN(ranks), 1 + rng.IntN(1500), 1 + rng.IntN(300)})
		}
		run := func(ff bool) (*recorder, []int64, int) {
			rec := newRecorder()
			var es []*Engine
			for i := 0; i < ranks; i++ {
				c := cfg
				c.NoFastForward = !ff
				if gated {
					c.Gate = &holdCycle{every: 4}
				}
				e, err := New(c, cost, rec)
				if err != nil {
					t.Fatal(err)
				}
				es = append(es, e)
			}
			g := NewLockstep(es)
			advances := 0
			step := func() {
				g.Advance()
				if advances++; advances > 10_000_000 {
					t.Fatal("group did not drain")
				}
			}
			for i, a := range arr {
				for g.NextEvent() <= a.at {
					step()
				}
				if err := es[a.rank].Submit(&Request{ID: int64(i), ISL: a.isl, OSL: a.osl}, a.at); err != nil {
					t.Fatal(err)
				}
			}
			for !math.IsInf(g.NextEvent(), 1) {
				step()
			}
			var its []int64
			for _, e := range es {
				its = append(its, e.Iterations)
			}
			return rec, its, advances
		}
		ff, ffIts, nFF := run(true)
		plain, plainIts, nPlain := run(false)
		advFF += nFF
		advPlain += nPlain
		if len(ff.done) != len(arr) || len(plain.done) != len(arr) {
			t.Fatalf("seed %d: completed %d / %d of %d", seed, len(ff.done), len(plain.done), len(arr))
		}
		for id, want := range plain.done {
			if got := ff.done[id]; math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Fatalf("seed %d (%d ranks) request %d: finish %.12f with fast-forward, %.12f without", seed, ranks, id, got, want)
			}
			if got, want := ff.first[id], plain.first[id]; math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Fatalf("seed %d (%d ranks) request %d: first token %.12f vs %.12f", seed, ranks, id, got, want)
			}
		}
		for i := range ffIts {
			if ffIts[i] != plainIts[i] {
				t.Fatalf("seed %d rank %d: %d iterations with fast-forward, %d without", seed, i, ffIts[i], plainIts[i])
			}
		}
	}
	if advFF*5 > advPlain {
		t.Errorf("fast-forward took %d group advances, the plain loop %d: want at least 5x fewer", advFF, advPlain)
	}
}
