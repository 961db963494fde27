package engine

import (
	"math"
	"testing"
)

// holdN holds waiting prompts for the first n times it is asked.
type holdN struct{ n, asked int }

func (h *holdN) HoldPrompts(*Engine) bool {
	h.asked++
	return h.asked <= h.n
}

// A held prompt waits one decode iteration per hold, and the engine steps
// those iterations one at a time (asking the gate each time) instead of
// fast-forwarding past them.
func TestPromptGateHoldsIterations(t *testing.T) {
	cost := linearCost{base: 0.001, perToken: 1e-5, perCtx: 0}
	step := 0.001 + 1e-5 // a decode iteration of one sequence
	for _, n := range []int{0, 1, 5} {
		rec := newRecorder()
		gate := &holdN{n: n}
		e, err := New(Config{MaxBatchedTokens: 512, MaxSeqs: 8, KVTokens: 10000, Gate: gate}, cost, rec)
		if err != nil {
			t.Fatal(err)
		}
		// Request 1 prefills alone (nothing waits behind it yet, so the gate
		// is not asked) and then decodes 100 steps.
		if err := e.Submit(&Request{ID: 1, ISL: 10, OSL: 101}, 0); err != nil {
			t.Fatal(err)
		}
		e.Advance() // request 1's prompt
		t1 := 0.001 + 10e-5
		if rec.first[1] != t1 {
			t.Fatalf("n=%d: request 1's first token at %g, want %g", n, rec.first[1], t1)
		}
		// Request 2 arrives during the first decode step; it may start at
		// the step's end, after n holds.
		if err := e.Submit(&Request{ID: 2, ISL: 10, OSL: 2}, t1+step/2); err != nil {
			t.Fatal(err)
		}
		drain(t, e)
		start := t1 + step*float64(1+n) // the step in progress plus the held ones
		want := start + 0.001 + 1e-5*float64(10+1)
		if d := rec.first[2] - want; math.Abs(d) > 1e-12 {
			t.Errorf("n=%d: request 2's first token at %g, want %g", n, rec.first[2], want)
		}
		if gate.asked != n+1 {
			t.Errorf("n=%d: gate asked %d times, want %d (once per held iteration and once to release)", n, gate.asked, n+1)
		}
	}
}
