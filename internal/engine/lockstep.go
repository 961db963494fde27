package engine

import (
	"cmp"
	"math"
	"slices"
)

// Lockstep steps one worker's attention-DP ranks together: every rank takes
// part in every MoE layer's collectives (idle ranks run empty batches), so
// an iteration ends when the slowest rank's does, and a rank prefilling
// holds the others' decode steps.
//
// When every busy rank starts a decode-only iteration, the group
// fast-forwards them as one run: step i of the run lasts the longest of the
// ranks' own step i, so the run's length is a sum over the upper envelope
// of one line per rank, in closed form. The run ends at the first rank's
// next completion or full cache, and an arrival at any rank cuts it at the
// step in progress, as a single engine's run is cut.
type Lockstep struct {
	ranks       []*Engine
	fastForward bool
	// run and lines are reused from run to run: when a run starts, every
	// rank of the last one has ended it.
	run   groupRun
	lines []line
}

// LeastLoaded is the index of the engine with the fewest admitted plus
// queued requests, counting pending(i) more for engine i when pending is
// set (requests routed to it still in its API server), so that a burst
// spreads over the engines; ties go to the first.
func LeastLoaded(es []*Engine, pending func(i int) int) int {
	best, load := 0, math.MaxInt
	for i, e := range es {
		l := e.Running() + e.Waiting()
		if pending != nil {
			l += pending(i)
		}
		if l < load {
			best, load = i, l
		}
	}
	return best
}

// Stepper is what a driver advances in time order: an engine, or a
// worker's ranks stepping together.
type Stepper interface {
	NextEvent() float64
	Advance()
}

// NewLockstep groups ranks; they must not be in another group. Ranks
// configured NoFastForward step every iteration as one step (the plain
// loop tests compare with).
func NewLockstep(ranks []*Engine) *Lockstep {
	g := &Lockstep{ranks: ranks, fastForward: !ranks[0].cfg.NoFastForward}
	for _, r := range ranks {
		r.group = g
	}
	return g
}

// Ranks is the number of engines in the group.
func (g *Lockstep) Ranks() int { return len(g.ranks) }

// Rank is the group's i-th engine.
func (g *Lockstep) Rank(i int) *Engine { return g.ranks[i] }

// NextEvent is when the group's iteration in progress ends: the latest of
// its busy ranks', to which every busy rank is stretched. A rank that
// started mid-iteration (a request arriving at an idle rank) joins it.
func (g *Lockstep) NextEvent() float64 {
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

// Advance ends the group's iteration (or run) on every rank and starts the next.
func (g *Lockstep) Advance() {
	end := g.NextEvent()
	for _, r := range g.ranks {
		if r.NextEvent() == end {
			r.Advance()
		}
	}
	if g.fastForward {
		g.startRun(end)
	}
}

// startRun turns the single steps the busy ranks just started at now into
// one fast-forwarded run when all of them only decode: no prompt chunk.
// The run ends at the first completion, full cache or change of a gate's
// answer.
func (g *Lockstep) startRun(now float64) {
	steps := int64(math.MaxInt64)
	lines := g.lines[:0]
	for _, r := range g.ranks {
		if !r.busy {
			continue
		}
		if r.itStart != now || r.itSteps != 1 || len(r.itChunks) > 0 {
			return
		}
		steps = min(steps, r.decodeRunSteps(), r.gateSteps())
		lines = append(lines, line{a: r.itFixed + r.ctxC*r.itCtxSum, b: r.ctxC * r.adv * float64(r.itDecodes)})
	}
	g.lines = lines
	if len(lines) == 0 || steps <= 1 {
		return
	}
	run := &g.run
	run.start = now
	run.envelope(lines, steps)
	end := now + run.elapsed(steps)
	for _, r := range g.ranks {
		if r.busy {
			r.itSteps, r.itEnd, r.run = steps, end, run
		}
	}
}

// truncate cuts the group's run in progress at the first step boundary at
// or after now, so that a request arriving at any rank joins the next
// iteration, as it would live.
func (g *Lockstep) truncate(now float64) {
	var run *groupRun
	var steps int64
	for _, r := range g.ranks {
		if r.busy && r.run != nil {
			run, steps = r.run, r.itSteps
			break
		}
	}
	if run == nil || steps <= 1 {
		return
	}
	dt := now - run.start
	// The smallest k whose steps end at or after now.
	lo, hi := int64(1), steps
	for lo < hi {
		mid := lo + (hi-lo)/2
		if run.elapsed(mid) >= dt {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo >= steps {
		return
	}
	end := run.start + run.elapsed(lo)
	for _, r := range g.ranks {
		if r.busy && r.run == run {
			r.itSteps, r.itEnd = lo, end
		}
	}
}

// line is one rank's step i duration a + b*i in a decode-only run.
type line struct{ a, b float64 }

// groupRun is a fast-forwarded run of a group's ranks from start: step i
// lasts seg[j].a + seg[j].b*i for the last segment j with seg[j].from <= i.
type groupRun struct {
	start float64
	seg   []segment
}

type segment struct {
	from int64
	line
}

// envelope finds which line is longest over steps 0..steps-1. It sorts
// lines (reordering them) by slope and keeps the upper hull: a line is
// longest from where it overtakes the one before it, so each hull line
// holds one range of steps, in slope order.
func (run *groupRun) envelope(lines []line, steps int64) {
	slices.SortFunc(lines, func(x, y line) int {
		if c := cmp.Compare(x.b, y.b); c != 0 {
			return c
		}
		return cmp.Compare(x.a, y.a)
	})
	hull := lines[:0]
	for _, l := range lines {
		// Of equal slopes the sort put the longest last.
		if n := len(hull); n > 0 && hull[n-1].b == l.b {
			hull = hull[:n-1]
		}
		// The last hull line is never longest if l overtakes it no later
		// than it overtakes the one before it.
		for n := len(hull); n >= 2 && cross(hull[n-2], l) <= cross(hull[n-2], hull[n-1]); n-- {
			hull = hull[:n-1]
		}
		hull = append(hull, l)
	}
	run.seg = run.seg[:0]
	for j, l := range hull {
		from := int64(0)
		if j > 0 {
			// The first step at which l is longer than the line before it.
			x := math.Floor(cross(hull[j-1], l)) + 1
			switch {
			case x >= float64(steps):
				return
			case x > 0:
				from = int64(x)
			}
		}
		run.seg = append(run.seg, segment{from: from, line: l})
	}
}

// cross is where the steeper line m overtakes l: the step x at which both
// last as long.
func cross(l, m line) float64 { return (l.a - m.a) / (m.b - l.b) }

// elapsed is the time of the run's first k steps.
func (run *groupRun) elapsed(k int64) float64 {
	var t float64
	for j, s := range run.seg {
		if s.from >= k {
			break
		}
		end := k
		if j+1 < len(run.seg) {
			end = min(end, run.seg[j+1].from)
		}
		n := float64(end - s.from)
		t += n*s.a + s.b*n*float64(s.from+end-1)/2
	}
	return t
}
