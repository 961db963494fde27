package serving

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// tokenCost is a fixed part per iteration plus a part per token.
type tokenCost struct{ base, perToken float64 }

func (c tokenCost) FixedStepTime(b perf.Batch) float64 {
	return c.base + c.perToken*float64(b.PrefillTokens+b.DecodeSeqs)
}
func (c tokenCost) DecodeCtxCost() float64 { return 0 }

type times struct{ first, done map[int64]float64 }

func (s *times) FirstToken(r *engine.Request, t float64) { s.first[r.ID] = t }
func (s *times) Finished(r *engine.Request, t float64)   { s.done[r.ID] = t }

// Two attention-DP ranks in lockstep: while rank B prefills a long prompt
// in two chunks, rank A's iterations last as long as B's; afterwards both
// decode at their own pace again (one step each, together).
func TestDPGroupStepsRanksTogether(t *testing.T) {
	cost := tokenCost{base: 1e-3, perToken: 1e-5}
	chunk, decode := 1e-3+512e-5, 1e-3+1e-5
	for _, grouped := range []bool{false, true} {
		s := &times{first: map[int64]float64{}, done: map[int64]float64{}}
		cfg := engine.Config{Role: engine.Aggregated, MaxBatchedTokens: 512, MaxSeqs: 8, KVTokens: 100000, NoFastForward: true}
		a, _ := engine.New(cfg, cost, s)
		b, _ := engine.New(cfg, cost, s)
		if err := a.Submit(&engine.Request{ID: 1, ISL: 10, OSL: 20}, 0); err != nil {
			t.Fatal(err)
		}
		if err := b.Submit(&engine.Request{ID: 2, ISL: 1024, OSL: 2}, 0); err != nil {
			t.Fatal(err)
		}
		var steps []stepper = []stepper{a, b}
		if grouped {
			steps = []stepper{&dpGroup{ranks: []*engine.Engine{a, b}}}
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
		if math.Abs(s.first[1]-first) > 1e-12 || math.Abs(s.done[1]-done) > 1e-12 {
			t.Errorf("grouped %v: rank A's request first token %g, done %g; want %g, %g", grouped, s.first[1], s.done[1], first, done)
		}
		if want := 2 * chunk; math.Abs(s.first[2]-want) > 1e-12 {
			t.Errorf("grouped %v: rank B's first token %g, want %g (its own two chunks)", grouped, s.first[2], want)
		}
	}
}

// stepGroups makes one group per worker of dp consecutive ranks, and
// leaves engines of dp 1 to step alone.
func TestStepGroups(t *testing.T) {
	var es []*engine.Engine
	for i := 0; i < 6; i++ {
		e, err := engine.New(engine.Config{MaxBatchedTokens: 8, MaxSeqs: 1, KVTokens: 10}, tokenCost{}, &times{})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	if got := stepGroups(es, 1); len(got) != 6 || got[2] != stepper(es[2]) {
		t.Errorf("dp 1: %d steppers, want the 6 engines", len(got))
	}
	got := stepGroups(es, 3)
	if len(got) != 2 {
		t.Fatalf("dp 3 over 6 engines: %d steppers, want 2 groups", len(got))
	}
	for w, st := range got {
		g, ok := st.(*dpGroup)
		if !ok || len(g.ranks) != 3 || g.ranks[0] != es[3*w] || g.ranks[2] != es[3*w+2] {
			t.Errorf("worker %d: %+v, want engines %d-%d", w, st, 3*w, 3*w+2)
		}
	}
}
