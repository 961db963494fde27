package serving

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/events"
)

// maxEvents bounds one estimate's work, in engine advances (an
// attention-DP group's advance counts once per rank, a fast-forwarded run
// once); a healthy run needs a few thousand.
const maxEvents = 5_000_000

// loop is a tiny discrete-event driver over a set of engines. Engine events
// never call back into an engine directly: follow-ups are deferred through
// the timed heap, so no engine is re-entered while it advances.
type loop struct {
	engines []*engine.Engine
	timers  events.Queue
	now     float64
	done    func() bool
	// steppers are what the loop advances: the engines, or a worker's
	// attention-DP ranks stepping together (see addWorkers).
	steppers []engine.Stepper
}

// addWorkers adds n engines of cfg as workers of dp attention-DP ranks
// (the last one may have fewer), each worker's ranks stepping together,
// and returns them.
func (l *loop) addWorkers(cfg engine.Config, n, dp, hold int, cost engine.Cost, sink engine.Sink) ([]*engine.Engine, error) {
	dp = max(dp, 1)
	var out []*engine.Engine
	for i := 0; i < n; i += dp {
		ranks, step, err := engine.NewRanks(cfg, min(dp, n-i), hold, cost, sink)
		if err != nil {
			return nil, err
		}
		out = append(out, ranks...)
		l.steppers = append(l.steppers, step)
	}
	l.engines = append(l.engines, out...)
	return out, nil
}

func (l *loop) after(at float64, fn func(now float64) error) { l.timers.At(at, fn) }

func (l *loop) run() error {
	for events := 0; !l.done(); {
		if events > maxEvents {
			return fmt.Errorf("estimate did not reach steady state within %d scheduling events; fewer users, shorter outputs or fewer attention-DP ranks need fewer", maxEvents)
		}
		next, idx := math.Inf(1), -1
		for i, e := range l.steppers {
			if t := e.NextEvent(); t < next {
				next, idx = t, i
			}
		}
		if t, ok := l.timers.Next(); ok && t <= next {
			l.now = t
			if err := l.timers.Run(); err != nil {
				return err
			}
			events++
			continue
		}
		if idx < 0 {
			return fmt.Errorf("estimate stalled: no engine has work and no request is pending")
		}
		l.now = next
		l.steppers[idx].Advance()
		events += steps(l.steppers[idx])
	}
	return nil
}

// steps is the engine advances one advance of st takes: a group advances
// every rank.
func steps(st engine.Stepper) int {
	if g, ok := st.(*engine.Lockstep); ok {
		return g.Ranks()
	}
	return 1
}

// leastLoaded picks the engine with the fewest admitted plus queued requests.
func leastLoaded(es []*engine.Engine) int { return engine.LeastLoaded(es, nil) }

// leastLoadedWith also counts requests routed to an engine that are still
// in its API server (pending[i]), so a burst spreads over the engines.
func leastLoadedWith(es []*engine.Engine, pending []int) int {
	return engine.LeastLoaded(es, func(i int) int { return pending[i] })
}
