// Package emulate is an inference worker without a GPU: an OpenAI-compatible
// server whose token timing comes from the simulator's engine loop (the
// performance model, continuous batching, chunked prefill, KV capacity,
// queueing) run in real time, with vLLM's metrics.
package emulate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Clock gives wall time; the server passes time.Now, tests a fake.
type Clock func() time.Time

// job is one request in the engine: tokens tells the HTTP side how many
// output tokens exist so far; it is closed when the request finishes.
type job struct {
	req      engine.Request
	tokens   chan int
	produced int
	last     float64 // time of the last token
	reason   string
	// arrival is when the client's request came in; ready when the API
	// server handed it to the engine (req.Arrival once submitted).
	arrival, ready float64
	// rank is the engine (attention-DP rank) that serves it.
	rank int
	// held marks a job whose first token waits for the TTFT floor; done
	// one that finished meanwhile, with final tokens.
	held, done bool
	final      int
}

// Realtime runs one worker's engine against the wall clock: each iteration
// ends when the performance model says it does, and every running request
// gets its token then. A worker of attention-DP ranks runs one engine a
// rank, stepping together, each with its own API server (as the estimate
// and the simulator run them); a request goes to the least loaded rank.
type Realtime struct {
	clock Clock
	start time.Time

	mu       sync.Mutex
	ranks    []*engine.Engine
	step     engine.Stepper
	role     engine.Role
	jobs     map[int64]*job
	nextID   int64
	wake     chan struct{}
	obs      Observer
	capacity int
	// The API server (tokenizer, request handling) serves one request at a
	// time before the engine sees it, as the simulator charges it; a
	// decode worker is handed requests that already passed one.
	front   func(isl int) (parallel, serial float64)
	fronts  []engine.APIServer // per rank
	inFront [][]*job           // per rank, FIFO: ready times do not decrease
	// floor is the least TTFT a request sees (perf.Worker.TTFTFloor):
	// latency on its path outside the engine, so a first token made
	// sooner is held until then (held, in arrival order).
	floor float64
	held  []*job
}

// Observer receives request events (metrics).
type Observer interface {
	FirstToken(isl int, ttft time.Duration)
	Token(itl time.Duration)
	Finished(isl, osl int, e2e time.Duration, reason string)
}

// NewRealtime builds the engine for worker w in role.
func NewRealtime(w *perf.Worker, role engine.Role, clock Clock, obs Observer) (*Realtime, error) {
	cfg, mem := w.Config(), w.Memory()
	dp := max(cfg.DP, 1)
	rt := &Realtime{clock: clock, start: clock(), role: role, jobs: map[int64]*job{}, wake: make(chan struct{}, 1), obs: obs,
		capacity: mem.KVTokens, fronts: make([]engine.APIServer, dp), inFront: make([][]*job, dp)}
	// Every iteration is an event: streaming needs each token's time.
	ec := engine.WorkerConfig(role, w)
	ec.NoFastForward = true
	ranks, step, err := engine.NewRanks(ec, dp, w.ADPBalanceIters(), w, (*sink)(rt))
	if err != nil {
		return nil, err
	}
	rt.ranks, rt.step = ranks, step
	if role != engine.Decode {
		// A decode worker's requests passed a prefill worker's floor.
		rt.front, rt.floor = w.FrontendSplit, w.TTFTFloor()
	}
	return rt, nil
}

func (rt *Realtime) now() float64 { return rt.clock().Sub(rt.start).Seconds() }

// ErrTooLong is returned for a request the KV cache can never hold.
var ErrTooLong = errors.New("request exceeds the KV cache")

// Submit queues a request of isl prompt and osl output tokens. The channel
// delivers the running count of output tokens and closes at the end.
// reason is the finish reason the metrics record ("length" or "stop").
func (rt *Realtime) Submit(isl, osl int, reason string) (<-chan int, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	// Checked here, not left to the engine: a request the API server holds
	// reaches the engine later.
	if isl < 1 || osl < 1 {
		return nil, fmt.Errorf("isl %d and osl %d must be >= 1", isl, osl)
	}
	if !rt.ranks[0].Fits(isl, osl) {
		return nil, fmt.Errorf("%w: %d prompt + %d output tokens, the cache holds %d", ErrTooLong, isl, osl, rt.KVTokens())
	}
	rt.nextID++
	now := rt.now()
	j := &job{req: engine.Request{ID: rt.nextID, ISL: isl, OSL: osl}, tokens: make(chan int, osl+1), reason: reason, arrival: now, ready: now,
		rank: rt.leastLoaded()}
	rt.jobs[j.req.ID] = j
	if rt.front != nil {
		if par, ser := rt.front(isl); par+ser > 0 {
			k := j.rank
			j.ready = rt.fronts[k].Admit(now, par, ser)
			rt.inFront[k] = append(rt.inFront[k], j)
			rt.nudge()
			return j.tokens, nil
		}
	}
	if err := rt.ranks[j.rank].Submit(&j.req, now); err != nil {
		delete(rt.jobs, j.req.ID)
		return nil, err
	}
	rt.nudge()
	return j.tokens, nil
}

// leastLoaded is the rank with the fewest requests, those in its API
// server counted.
func (rt *Realtime) leastLoaded() int {
	return engine.LeastLoaded(rt.ranks, func(k int) int { return len(rt.inFront[k]) })
}

// nudge makes Run look at the engine again (its next event moved).
func (rt *Realtime) nudge() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// Abort ends a submitted request whose client went away, as vLLM aborts
// it: the engine frees its slot and cache soon, and its channel closes.
func (rt *Realtime) Abort(tokens <-chan int) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, j := range rt.jobs {
		if j.tokens != tokens {
			continue
		}
		// Still in its rank's API server: it never reaches the engine.
		q := rt.inFront[j.rank]
		for i, f := range q {
			if f == j {
				rt.inFront[j.rank] = append(q[:i], q[i+1:]...)
				delete(rt.jobs, j.req.ID)
				close(j.tokens)
				if rt.obs != nil {
					rt.obs.Finished(j.req.ISL, 0, secs(rt.now()-j.arrival), "abort")
				}
				return
			}
		}
		j.reason = "abort"
		rt.ranks[j.rank].Abort(&j.req, rt.now())
		rt.nudge()
		return
	}
}

// KVTokens is the KV-cache capacity of an engine (one rank).
func (rt *Realtime) KVTokens() int { return rt.capacity }

// Stats is the worker's state for the metrics: requests over its ranks,
// and the share of their KV cache in use.
func (rt *Realtime) Stats() (running, waiting int, kv float64) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, e := range rt.ranks {
		running += e.Running()
		waiting += e.Waiting()
		kv += e.KVUsed()
	}
	return running, waiting, kv / float64(len(rt.ranks))
}

// Run advances the engine in real time until ctx ends.
func (rt *Realtime) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := rt.advance()
		wait := time.Hour
		if next < 1e300 {
			wait = time.Duration((next - rt.now()) * float64(time.Second))
		}
		timer.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return
		case <-rt.wake:
		case <-timer.C:
		}
	}
}

// advance completes every iteration that has ended by now and returns
// when the next one ends (simulated seconds since start).
func (rt *Realtime) advance() float64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	now := rt.now()
	for {
		// Engine iterations and API-server hand-offs, in time order.
		t := rt.step.NextEvent()
		first := -1
		for k, q := range rt.inFront {
			if len(q) > 0 && (first < 0 || q[0].ready < rt.inFront[first][0].ready) {
				first = k
			}
		}
		if len(rt.held) > 0 {
			// Held first tokens go out in time order with the rest.
			r := rt.held[0].arrival + rt.floor
			if r <= t && (first < 0 || r <= rt.inFront[first][0].ready) {
				if r > now {
					return r
				}
				rt.release(r)
				continue
			}
		}
		if first >= 0 && rt.inFront[first][0].ready <= t {
			j := rt.inFront[first][0]
			if j.ready > now {
				return j.ready
			}
			rt.inFront[first] = rt.inFront[first][1:]
			if err := rt.ranks[j.rank].Submit(&j.req, j.ready); err != nil {
				// Submit checked the cache; nothing else refuses a request.
				delete(rt.jobs, j.req.ID)
				close(j.tokens)
			}
			continue
		}
		if t > now {
			return t
		}
		rt.step.Advance()
		rt.tick(t)
	}
}

// tick hands the requests the tokens the iteration that ended at t
// produced: each engine iteration yields one token per decoding sequence.
func (rt *Realtime) tick(t float64) {
	for _, j := range rt.jobs {
		g := rt.ranks[j.rank].Generated(&j.req)
		if g <= j.produced {
			continue
		}
		if j.produced == 0 && t < j.arrival+rt.floor {
			rt.hold(j)
			continue
		}
		if j.produced == 0 && rt.obs != nil {
			rt.obs.FirstToken(j.req.ISL, secs(t-j.arrival))
		} else if rt.obs != nil {
			itl := secs((t - j.last) / float64(g-j.produced))
			for range g - j.produced {
				rt.obs.Token(itl)
			}
		}
		j.produced, j.last = g, t
		j.tokens <- g
	}
}

// hold keeps j's first token until the TTFT floor has passed. The list is
// kept in arrival order (tick meets jobs in any order); every job waits
// the same floor, so that is release order.
func (rt *Realtime) hold(j *job) {
	if j.held {
		return
	}
	j.held = true
	i := len(rt.held)
	for i > 0 && rt.held[i-1].arrival > j.arrival {
		i--
	}
	rt.held = append(rt.held, nil)
	copy(rt.held[i+1:], rt.held[i:])
	rt.held[i] = j
}

// release hands the first held job its tokens at t, its floor: what the
// engine made so far, or all of them if it finished meanwhile.
func (rt *Realtime) release(t float64) {
	j := rt.held[0]
	rt.held = rt.held[1:]
	g := j.final
	if !j.done {
		g = rt.ranks[j.rank].Generated(&j.req)
	}
	if rt.obs != nil {
		rt.obs.FirstToken(j.req.ISL, secs(t-j.arrival))
	}
	j.produced, j.last = g, t
	j.tokens <- g
	if j.done {
		close(j.tokens)
		if rt.obs != nil {
			rt.obs.Finished(j.req.ISL, j.final, secs(t-j.arrival), j.reason)
		}
	}
}

// sink receives the engine's events under rt.mu.
type sink Realtime

// FirstToken needs nothing: tick sees the token through Generated.
func (s *sink) FirstToken(*engine.Request, float64) {}

func (s *sink) Finished(r *engine.Request, t float64) {
	rt := (*Realtime)(s)
	j := rt.jobs[r.ID]
	if j == nil {
		return
	}
	delete(rt.jobs, r.ID)
	final := r.OSL
	if rt.role == engine.Prefill {
		final = 1
	}
	if j.produced == 0 && t < j.arrival+rt.floor {
		j.done, j.final = true, final
		rt.hold(j)
		return
	}
	if j.produced == 0 && rt.obs != nil {
		rt.obs.FirstToken(r.ISL, secs(t-j.arrival))
	}
	if j.produced < final {
		if j.produced > 0 && rt.obs != nil {
			itl := secs((t - j.last) / float64(final-j.produced))
			for range final - j.produced {
				rt.obs.Token(itl)
			}
		}
		j.tokens <- final
	}
	close(j.tokens)
	if rt.obs != nil {
		rt.obs.Finished(r.ISL, final, secs(t-j.arrival), j.reason)
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
