package serving

import (
	"math"

	"github.com/gpuplane/gpuplane/internal/engine"
)

// dpGroup steps one worker's attention-DP ranks together: every rank takes
// part in every MoE layer's collectives (idle ranks run empty batches), so
// an iteration ends when the slowest rank's does, and a rank prefilling
// holds the others' decode steps. The ranks run without fast-forward, so
// each iteration is one step that can be stretched.
type dpGroup struct{ ranks []*engine.Engine }

// NextEvent is when the group's iteration in progress ends: the latest of
// its busy ranks', to which every busy rank is stretched. A rank that
// started mid-iteration (a request arriving at an idle rank) joins it.
func (g *dpGroup) NextEvent() float64 {
	end := math.Inf(-1)
	for _, r := range g.ranks {
		if t := r.NextEvent(); !math.IsInf(t, 1) && t > end {
			end = t
		}
	}
	if math.IsInf(end, -1) {
		return math.Inf(1)
	}
	for _, r := range g.ranks {
		r.Stretch(end)
	}
	return end
}

// Advance ends the group's iteration on every rank and starts the next.
func (g *dpGroup) Advance() {
	end := g.NextEvent()
	for _, r := range g.ranks {
		if r.NextEvent() == end {
			r.Advance()
		}
	}
}

// stepGroups is what the loop advances for engines that are consecutive
// runs of dp attention-DP ranks: a dpGroup per worker, or the engines
// themselves when dp is 1.
func stepGroups(engines []*engine.Engine, dp int) []stepper {
	var out []stepper
	if dp <= 1 {
		for _, e := range engines {
			out = append(out, e)
		}
		return out
	}
	for i := 0; i < len(engines); i += dp {
		out = append(out, &dpGroup{ranks: engines[i:min(i+dp, len(engines))]})
	}
	return out
}
