package serving

import "github.com/gpuplane/gpuplane/internal/engine"

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

func (g *adpBalance) hold(r dpRank) bool {
	allPrompts, allDecoding := true, true
	for _, o := range g.ranks {
		if o.Waiting()+o.Prefilling() == 0 {
			allPrompts = false
		}
		if o.Decoding() == 0 {
			allDecoding = false
		}
	}
	if allPrompts || !allDecoding {
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
