package serving

import (
	"math"

	"github.com/gpuplane/gpuplane/internal/engine"
)

// dpRank is what the balance reads of an attention-DP rank's engine.
type dpRank interface {
	Waiting() int
	Prefilling() int
	Decoding() int
}

// adpBalance holds an attention-DP rank's waiting prompts while every rank
// of its worker is decoding and not every rank has a prompt to start, for
// at most timeout iterations: TensorRT-LLM's attention-DP balancing, which
// starts prompts on all ranks in the same iteration so that no rank's
// prefill stalls the others' decode steps in the shared MoE layers. Under
// light load (a rank with nothing to decode) prompts start at once.
type adpBalance struct {
	ranks   []dpRank
	timeout int
	waited  map[dpRank]int
}

func newADPBalance(timeout int) *adpBalance {
	return &adpBalance{timeout: timeout, waited: map[dpRank]int{}}
}

// HoldPrompts implements engine.PromptGate.
func (g *adpBalance) HoldPrompts(e *engine.Engine) bool { return g.hold(e) }

// Steady implements engine.SteadyGate. While no rank's requests change,
// a rank told to start because the ranks are not balancing is told so
// again, and a held rank stays held until its timeout.
func (g *adpBalance) Steady(e *engine.Engine) int64 { return g.steady(e) }

func (g *adpBalance) steady(r dpRank) int64 {
	w, b := g.waited[r], g.balancing()
	switch {
	case w == 0 && !b:
		return math.MaxInt64
	case w > 0 && b:
		return int64(g.timeout - w + 1)
	}
	return 1
}

// Skip implements engine.SteadyGate: n more held iterations count
// towards the timeout.
func (g *adpBalance) Skip(e *engine.Engine, n int64) { g.skip(e, n) }

func (g *adpBalance) skip(r dpRank, n int64) {
	if g.waited[r] > 0 {
		g.waited[r] += int(n)
	}
}

// balancing is whether prompts wait for the balance: every rank decodes
// and some rank has no prompt to start.
func (g *adpBalance) balancing() bool {
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

func (g *adpBalance) hold(r dpRank) bool {
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
