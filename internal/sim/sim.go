// Package sim is a discrete-event simulator of a whole LLM serving
// deployment over time: arrivals from a workload, a router, aggregated or
// prefill/decode pools of engines run iteration by iteration, KV hand-off,
// workers that start after a delay and drain when removed. It is pure:
// simulated time, randomness only in the workload passed in.
package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/events"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// Router policies.
const (
	RoundRobin       = "round-robin"
	LeastOutstanding = "least-outstanding"
	LeastKV          = "least-kv"
)

// PoolSpec is one pool of identical workers.
type PoolSpec struct {
	Name   string
	Role   engine.Role
	Worker *perf.Worker
	// Replicas at time zero (ready at once).
	Replicas int
	// StartupDelay is how long a worker added later takes to serve (model load).
	StartupDelay float64
}

// Config is a deployment and how to measure it.
type Config struct {
	// Pools: one Aggregated pool, or a Prefill and a Decode pool.
	Pools  []PoolSpec
	Router string
	// KVTransfer is the prefill-to-decode hand-off time in seconds for a
	// prompt of isl tokens (nil: instant).
	KVTransfer func(isl int) float64
	// TTFTSLO and ITLSLO (seconds) decide SLO attainment.
	TTFTSLO, ITLSLO float64
	// TTFTPercentile and ITLPercentile are the percentiles the SLO judges
	// over the run (0: the mean); the summary says whether they hold.
	TTFTPercentile, ITLPercentile float64
	// Interval is the width of the time series buckets (default 10 s).
	Interval float64
	// DrainTimeout bounds how long after the last arrival requests may finish (default 600 s).
	DrainTimeout float64
	// Users, when set, drives the run by concurrency instead of by rate.
	Users *Users
	// OnRequest, when set, receives every finished request (for a per-request log).
	OnRequest func(Record)
}

// Record is one finished request.
type Record struct {
	ID int64
	// Worker is the pool and index of the worker that produced the last token, e.g. "decode/0".
	Worker             string
	ArrivalS           float64
	ISL, OSL           int
	TTFTms, ITLms, E2E float64
}

// Users is a concurrency-driven workload: N users each send a request,
// wait for its last token, think, and send the next, until Duration.
// With an arrival source beside them they are a burst on top of it.
type Users struct {
	N        int
	ISL, OSL workload.Dist
	Think    workload.Dist // milliseconds; nil = no think time
	// Start is when the first user sends; Duration is when users stop
	// sending (seconds from time zero).
	Start    float64
	Duration float64
	// Ramp spreads the users' first requests evenly over [Start, Start+Ramp).
	Ramp float64
	Rng  *rand.Rand
}

type worker struct {
	index int
	pool  *pool
	// ranks are the worker's engines: one, or its attention-DP ranks,
	// which step together (step).
	ranks    []*engine.Engine
	step     engine.Stepper
	readyAt  float64
	draining bool
	gone     bool
	started  float64
	stopped  float64
	// Each rank's API server takes requests one at a time before its
	// engine (tokenising, validation): fronts[k] is rank k's,
	// pending[k] how many requests it holds, inFront the sum.
	// A server per attention-DP rank is what the estimate does (one per
	// worker fitted the measured dp runs worse; see PERFORMANCE-MODEL.md).
	fronts  []engine.APIServer
	pending []int
	inFront int
}

// load is what least-outstanding routing compares.
func (w *worker) load() int {
	n := w.inFront
	for _, e := range w.ranks {
		n += e.Running() + e.Waiting()
	}
	return n
}

// waiting is the requests queued in the worker's engines.
func (w *worker) waiting() int {
	n := 0
	for _, e := range w.ranks {
		n += e.Waiting()
	}
	return n
}

// kvUsed is the share of the worker's KV cache in use, over its ranks.
func (w *worker) kvUsed() float64 {
	var kv float64
	for _, e := range w.ranks {
		kv += e.KVUsed()
	}
	return kv / float64(len(w.ranks))
}

// rank is the rank a request to the worker goes to: the least loaded,
// counting requests in its API server, as an attention-DP worker spreads
// requests over its ranks.
func (w *worker) rank() int {
	return engine.LeastLoaded(w.ranks, func(k int) int { return w.pending[k] })
}

type pool struct {
	spec    PoolSpec
	workers []*worker
	rr      int
}

func (w *worker) name() string { return fmt.Sprintf("%s/%d", w.pool.spec.Name, w.index) }

func (p *pool) active(now float64) []*worker {
	var out []*worker
	for _, w := range p.workers {
		if !w.gone && !w.draining && w.readyAt <= now {
			out = append(out, w)
		}
	}
	return out
}

// Replicas is the number of workers not draining (starting ones included).
func (p *pool) replicas() int {
	n := 0
	for _, w := range p.workers {
		if !w.gone && !w.draining {
			n++
		}
	}
	return n
}

type request struct {
	engine.Request
	arrival, first float64
	prefillDone    bool
	// fromUser marks a request of a concurrency-driven user, who sends the next when it ends.
	fromUser bool
}

// Sim is one simulation run.
type Sim struct {
	cfg     Config
	src     workload.Source
	pools   []*pool
	agg     *pool
	prefill *pool
	decode  *pool
	now     float64
	timers  events.Queue
	pending *workload.Request // next arrival
	waiting []*request        // arrived while no worker of the first pool is ready
	rec     *recorder
	nextID  int64
	reqs    map[int64]*request
}

// New validates the deployment.
func New(cfg Config, src workload.Source) (*Sim, error) {
	if cfg.Interval == 0 {
		cfg.Interval = 10
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 600
	}
	if cfg.Router == "" {
		cfg.Router = LeastOutstanding
	}
	switch cfg.Router {
	case RoundRobin, LeastOutstanding, LeastKV:
	default:
		return nil, fmt.Errorf("router: %q is not round-robin, least-outstanding or least-kv", cfg.Router)
	}
	if cfg.Users != nil {
		u := cfg.Users
		if u.N < 1 || u.ISL == nil || u.OSL == nil || u.Duration <= u.Start || u.Start < 0 || u.Rng == nil {
			return nil, fmt.Errorf("users: need n >= 1, isl and osl distributions, 0 <= start < duration and a seeded generator")
		}
	} else if src == nil {
		return nil, fmt.Errorf("workload: an arrival source or users is required")
	}
	s := &Sim{cfg: cfg, src: src, reqs: map[int64]*request{}}
	s.rec = newRecorder(cfg)
	for _, ps := range cfg.Pools {
		if ps.Worker == nil || ps.Replicas < 0 || ps.StartupDelay < 0 {
			return nil, fmt.Errorf("pool %q: needs a worker, replicas >= 0 and startupDelay >= 0", ps.Name)
		}
		p := &pool{spec: ps}
		s.pools = append(s.pools, p)
		// Every pool serves one model on one backend; the floor is theirs.
		s.rec.ttftFloor = max(s.rec.ttftFloor, ps.Worker.TTFTFloor())
		switch ps.Role {
		case engine.Aggregated:
			s.agg = p
		case engine.Prefill:
			s.prefill = p
		case engine.Decode:
			s.decode = p
		}
	}
	if (s.agg == nil) == (s.prefill == nil || s.decode == nil) || len(s.pools) != map[bool]int{true: 1, false: 2}[s.agg != nil] {
		return nil, fmt.Errorf("pools: give one aggregated pool, or one prefill and one decode pool")
	}
	for _, p := range s.pools {
		for i := 0; i < p.spec.Replicas; i++ {
			if err := s.addWorker(p, 0, 0); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Users != nil {
		for u := 0; u < cfg.Users.N; u++ {
			s.after(cfg.Users.Start+cfg.Users.Ramp*float64(u)/float64(cfg.Users.N), s.userSends)
		}
	}
	return s, nil
}

// userSends is one user's next request (concurrency-driven runs).
func (s *Sim) userSends(now float64) error {
	u := s.cfg.Users
	if now >= u.Duration {
		return nil
	}
	return s.arrive(workload.Request{At: now, ISL: u.ISL.Sample(u.Rng), OSL: u.OSL.Sample(u.Rng)}, true)
}

func (s *Sim) arrive(a workload.Request, fromUser bool) error {
	s.nextID++
	r := &request{Request: engine.Request{ID: s.nextID, ISL: a.ISL, OSL: a.OSL}, arrival: a.At, fromUser: fromUser}
	s.reqs[r.ID] = r
	s.rec.arrived(a)
	return s.dispatch(r, a.At)
}

func (s *Sim) addWorker(p *pool, now, delay float64) error {
	cfg := p.spec.Worker.Config()
	w := &worker{index: len(p.workers), pool: p, readyAt: now + delay, started: now, stopped: math.Inf(1)}
	ranks, step, err := engine.NewRanks(engine.WorkerConfig(p.spec.Role, p.spec.Worker), cfg.DP, p.spec.Worker.ADPBalanceIters(), p.spec.Worker, sinkFor{s, w})
	if err != nil {
		return fmt.Errorf("pool %s: %w", p.spec.Name, err)
	}
	w.ranks, w.step = ranks, step
	w.fronts = make([]engine.APIServer, len(ranks))
	w.pending = make([]int, len(ranks))
	p.workers = append(p.workers, w)
	if delay > 0 {
		s.after(w.readyAt, func(now float64) error { return s.flushWaiting(now) })
	}
	return nil
}

// Scale sets a pool's replica count at time now: new workers serve after
// the pool's start-up delay; removed ones (newest first) stop taking
// requests and leave when idle. This is the hook the planner drives.
func (s *Sim) Scale(poolName string, replicas int, now float64) error {
	if replicas < 0 {
		return fmt.Errorf("scale %s: replicas %d must be >= 0", poolName, replicas)
	}
	for _, p := range s.pools {
		if p.spec.Name != poolName {
			continue
		}
		for p.replicas() < replicas {
			if err := s.addWorker(p, now, p.spec.StartupDelay); err != nil {
				return err
			}
		}
		for i := len(p.workers) - 1; i >= 0 && p.replicas() > replicas; i-- {
			if w := p.workers[i]; !w.gone && !w.draining {
				w.draining = true
				s.retireIfIdle(w, now)
			}
		}
		return nil
	}
	return fmt.Errorf("scale: no pool named %q", poolName)
}

func (s *Sim) retireIfIdle(w *worker, now float64) {
	if w.draining && !w.gone && w.load() == 0 {
		w.gone, w.stopped = true, now
	}
}

// Replicas reports a pool's current replica count (starting workers included).
func (s *Sim) Replicas(poolName string) int {
	for _, p := range s.pools {
		if p.spec.Name == poolName {
			return p.replicas()
		}
	}
	return 0
}

func (s *Sim) route(p *pool, now float64) *worker {
	ws := p.active(now)
	if len(ws) == 0 {
		return nil
	}
	switch s.cfg.Router {
	case RoundRobin:
		p.rr++
		return ws[p.rr%len(ws)]
	case LeastKV:
		best := ws[0]
		for _, w := range ws[1:] {
			if w.kvUsed() < best.kvUsed() {
				best = w
			}
		}
		return best
	}
	best := ws[0]
	for _, w := range ws[1:] {
		if w.load() < best.load() {
			best = w
		}
	}
	return best
}

func (s *Sim) entryPool() *pool {
	if s.agg != nil {
		return s.agg
	}
	return s.prefill
}

func (s *Sim) dispatch(r *request, now float64) error {
	p := s.entryPool()
	w := s.route(p, now)
	if w == nil {
		s.waiting = append(s.waiting, r)
		return nil
	}
	// The worker's API server handles the request first (the same
	// per-request time the steady-state estimate charges), then its engine.
	par, ser := p.spec.Worker.FrontendSplit(r.ISL)
	k := w.rank()
	if par+ser <= 0 {
		s.submit(w, k, r, now)
		return nil
	}
	w.pending[k]++
	w.inFront++
	s.after(w.fronts[k].Admit(now, par, ser), func(at float64) error {
		w.pending[k]--
		w.inFront--
		s.submit(w, k, r, at)
		return nil
	})
	return nil
}

// submit hands a request that left the API server to the worker's rank
// k; a request the engine cannot hold is rejected.
func (s *Sim) submit(w *worker, k int, r *request, now float64) {
	osl := r.OSL
	if w.pool.spec.Role == engine.Prefill {
		osl = 1
	}
	er := &engine.Request{ID: r.ID, ISL: r.ISL, OSL: osl}
	if err := w.ranks[k].Submit(er, now); err != nil {
		s.rec.rejected(now)
		delete(s.reqs, r.ID)
		if s.cfg.Users != nil {
			s.after(now+1, s.userSends) // the user tries again a second later
		}
		s.retireIfIdle(w, now)
	}
}

func (s *Sim) flushWaiting(now float64) error {
	q := s.waiting
	s.waiting = nil
	for _, r := range q {
		if err := s.dispatch(r, now); err != nil {
			return err
		}
	}
	return nil
}

// sinkFor attributes engine events to a worker.
type sinkFor struct {
	s *Sim
	w *worker
}

// FirstToken records an aggregated engine's first token, and a decode
// engine admitting a request after its hand-off landed: the user's stream
// comes from the decode worker (serving's decodeSink does the same).
func (k sinkFor) FirstToken(er *engine.Request, t float64) {
	r := k.s.reqs[er.ID]
	if r == nil {
		return
	}
	switch k.w.pool.spec.Role {
	case engine.Aggregated:
		if r.first == 0 {
			r.first = t
		}
	case engine.Decode:
		r.first = math.Max(r.first, t)
	}
}

func (k sinkFor) Finished(er *engine.Request, t float64) {
	s := k.s
	r := s.reqs[er.ID]
	if r == nil {
		return
	}
	defer s.retireIfIdle(k.w, t)
	if k.w.pool.spec.Role == engine.Prefill {
		land := t
		if s.cfg.KVTransfer != nil {
			land += s.cfg.KVTransfer(r.ISL)
		}
		r.first = land
		s.after(land, func(now float64) error { return s.toDecode(r, now) })
		return
	}
	rec := s.rec.finished(r, t)
	if s.cfg.OnRequest != nil {
		rec.Worker = k.w.name()
		s.cfg.OnRequest(rec)
	}
	delete(s.reqs, r.ID)
	if u := s.cfg.Users; u != nil && r.fromUser {
		think := 0.0
		if u.Think != nil {
			think = float64(u.Think.Sample(u.Rng)) / 1e3
		}
		s.after(t+think, s.userSends)
	}
}

func (s *Sim) toDecode(r *request, now float64) error {
	w := s.route(s.decode, now)
	if w == nil {
		// No decode worker is ready: retry when one is.
		s.after(now+1, func(at float64) error { return s.toDecode(r, at) })
		return nil
	}
	return w.ranks[w.rank()].Submit(&engine.Request{ID: r.ID, ISL: r.ISL, OSL: r.OSL}, now)
}

// Step advances the simulation to time until (events at until included)
// and reports whether anything is left to do.
func (s *Sim) Step(until float64) (bool, error) {
	for {
		if s.pending == nil && s.src != nil {
			r, ok, err := s.src.Next()
			if err != nil {
				return false, fmt.Errorf("workload: %w", err)
			}
			if ok {
				s.pending = &r
			}
		}
		next, kind := math.Inf(1), 0
		var st engine.Stepper
		if s.pending != nil {
			next, kind = s.pending.At, 1
		}
		if t, ok := s.timers.Next(); ok && t < next {
			next, kind = t, 2
		}
		for _, p := range s.pools {
			for _, w := range p.workers {
				if t := w.step.NextEvent(); t < next {
					next, kind, st = t, 3, w.step
				}
			}
		}
		if kind == 0 {
			return false, nil
		}
		if next > until {
			s.now = until
			s.rec.tick(s, until)
			return true, nil
		}
		s.now = next
		s.rec.tick(s, next)
		switch kind {
		case 1:
			a := *s.pending
			s.pending = nil
			if err := s.arrive(a, false); err != nil {
				return false, err
			}
		case 2:
			if err := s.timers.Run(); err != nil {
				return false, err
			}
		case 3:
			st.Advance()
		}
	}
}

// Run simulates until the workload ends and every request finished (or the
// drain timeout passed), and summarises.
func (s *Sim) Run() (*Summary, error) {
	for {
		more, err := s.Step(s.now + s.cfg.Interval)
		if err != nil {
			return nil, err
		}
		if !more || s.Drained() {
			break
		}
	}
	return s.Summary(), nil
}

// PointsSince returns the closed intervals of the time series from index i on.
func (s *Sim) PointsSince(i int) []Point {
	if i >= len(s.rec.series) {
		return nil
	}
	return s.rec.series[i:]
}

// Drained reports whether the drain timeout after the last arrival passed.
func (s *Sim) Drained() bool {
	return s.pending == nil && s.rec.lastArrival > 0 && s.now > s.rec.lastArrival+s.cfg.DrainTimeout
}

// Summary reports what the run measured so far.
func (s *Sim) Summary() *Summary { return s.rec.summary(s) }

func (s *Sim) after(at float64, fn func(float64) error) { s.timers.At(at, fn) }
