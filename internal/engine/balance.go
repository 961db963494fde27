package engine

import (
	"fmt"
	"math"
)

// rankState is what the balance reads of an attention-DP rank's engine.
type rankState interface {
	Waiting() int
	Prefilling() int
	Decoding() int
}

// Balance holds an attention-DP rank's waiting prompts while every rank
// of its worker is decoding and not every rank has a prompt to start, for
// at most timeout iterations: TensorRT-LLM's attention-DP balancing, which
// starts prompts on all ranks in the same iteration so that no rank's
// prefill stalls the others' decode steps in the shared MoE layers. Under
// light load (a rank with nothing to decode) prompts start at once.
type Balance struct {
	ranks   []rankState
	timeout int
	waited  map[rankState]int
}

// NewBalance is the balance of one worker's ranks, holding a prompt for at
// most timeout iterations; ranks join it with Join.
func NewBalance(timeout int) *Balance {
	return &Balance{timeout: timeout, waited: map[rankState]int{}}
}

// Join adds a rank whose engine has the balance as its gate.
func (g *Balance) Join(e *Engine) { g.ranks = append(g.ranks, e) }

// HoldPrompts implements PromptGate.
func (g *Balance) HoldPrompts(e *Engine) bool { return g.hold(e) }

// Steady implements SteadyGate. While no rank's requests change,
// a rank told to start because the ranks are not balancing is told so
// again, and a held rank stays held until its timeout.
func (g *Balance) Steady(e *Engine) int64 { return g.steady(e) }

func (g *Balance) steady(r rankState) int64 {
	w, b := g.waited[r], g.balancing()
	switch {
	case w == 0 && !b:
		return math.MaxInt64
	case w > 0 && b:
		return int64(g.timeout - w + 1)
	}
	return 1
}

// Skip implements SteadyGate: n more held iterations count
// towards the timeout.
func (g *Balance) Skip(e *Engine, n int64) { g.skip(e, n) }

func (g *Balance) skip(r rankState, n int64) {
	if g.waited[r] > 0 {
		g.waited[r] += int(n)
	}
}

// balancing is whether prompts wait for the balance: every rank decodes
// and some rank has no prompt to start.
func (g *Balance) balancing() bool {
	allPrompts, allDecoding := true, true
	for _, o := range g.ranks {
		if o.Waiting()+o.Prefilling() == 0 {
			allPrompts = false
		}
		if o.Decoding() == 0 {
			allDecoding = false
		}
	}
	return !allPrompts && allDecoding
}

func (g *Balance) hold(r rankState) bool {
	if !g.balancing() {
		g.waited[r] = 0
		return false
	}
	g.waited[r]++
	if g.waited[r] > g.timeout {
		g.waited[r] = 0
		return false
	}
	return true
}

// NewRanks creates one worker's dp attention-DP ranks, each an engine of
// cfg reporting to sink, and what steps them: the engine itself when dp is
// 1, else a Lockstep. With hold > 0 and more than one rank, an aggregated
// worker's ranks share a Balance of hold iterations (the TensorRT-LLM
// policy; see perf.BackendParams.ADPBalanceIters).
func NewRanks(cfg Config, dp, hold int, cost Cost, sink Sink) ([]*Engine, Stepper, error) {
	if dp < 1 {
		return nil, nil, fmt.Errorf("engine: dp %d must be >= 1", dp)
	}
	var gate *Balance
	if hold > 0 && dp > 1 && cfg.Role == Aggregated {
		gate = NewBalance(hold)
		cfg.Gate = gate
	}
	ranks := make([]*Engine, 0, dp)
	for range dp {
		e, err := New(cfg, cost, sink)
		if err != nil {
			return nil, nil, err
		}
		if gate != nil {
			gate.Join(e)
		}
		ranks = append(ranks, e)
	}
	if dp == 1 {
		return ranks, ranks[0], nil
	}
	return ranks, NewLockstep(ranks), nil
}
