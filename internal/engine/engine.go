// Package engine runs one serving engine's scheduler iteration by
// iteration in simulated time: continuous batching, chunked prefill under a
// token budget, a sequence cap and KV-cache admission. Iteration times come
// from a Cost (the performance model). Runs of identical decode iterations
// are fast-forwarded in closed form, so cost grows with the number of
// scheduling events, not with the number of generated tokens.
//
// The package is pure: time is a float64 of simulated seconds passed in by
// the caller, and nothing here reads a clock or does I/O.
package engine

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// Role is what part of serving an engine does.
type Role int

// Roles.
const (
	// Aggregated engines prefill and decode.
	Aggregated Role = iota
	// Prefill engines compute the prompt and the first token, then hand the request off.
	Prefill
	// Decode engines receive a prefilled request and generate the rest.
	Decode
)

func (r Role) String() string {
	switch r {
	case Prefill:
		return "prefill"
	case Decode:
		return "decode"
	}
	return "agg"
}

// Cost is what the engine needs from the performance model. StepTime must be
// FixedStepTime(b) + DecodeCtxCost()*b.DecodeCtx.
type Cost interface {
	FixedStepTime(b perf.Batch) float64
	DecodeCtxCost() float64
}

// Windowed is a Cost whose model has layers that attend to at most a
// window of keys (sliding-window layers, or the top-k keys of sparse
// attention): the engine then also sums the prompt chunks' query-key pairs
// under that window.
type Windowed interface {
	AttentionWindow() int
}

// Config sets the scheduler limits.
type Config struct {
	Role Role
	// MaxBatchedTokens is the token budget of one iteration (decodes count one each).
	MaxBatchedTokens int
	// MaxSeqs caps the sequences admitted at once.
	MaxSeqs int
	// KVTokens is the KV-cache capacity. Blocks are allocated as tokens are
	// computed; when a decode step would overflow, the newest request is
	// preempted and later recomputed (vLLM's recompute policy).
	KVTokens int
	// NoFastForward simulates every decode iteration one by one. It exists so
	// tests can check the closed-form fast-forward against the plain loop.
	NoFastForward bool
	// Gate, when set, may hold back waiting prompts for an iteration (an
	// attention-DP rank waiting for its peers; see PromptGate).
	Gate PromptGate
	// TokensPerStep is the tokens a decoding sequence gains per step: the
	// mean acceptance length of speculative decoding (0 or 1: one). A
	// fraction is kept as an expectation: a request needs
	// ceil(remaining/TokensPerStep) steps and its cache grows by the
	// fraction each step.
	TokensPerStep float64
	// ReserveFull admits a request only when the cache can hold all of it,
	// prompt and every output token, beside what the running requests
	// reserved for theirs, so no decode step ever evicts one
	// (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity policy). Off,
	// blocks are taken as tokens are computed and the newest request is
	// preempted when a step would overflow (vLLM, SGLang).
	ReserveFull bool
}

// PromptGate decides, at the start of each iteration of an engine with
// prompts waiting and requests decoding, whether the engine leaves the
// prompts waiting this iteration. It is not asked when nothing decodes, so
// a hold cannot leave the engine idle with prompts waiting. While it
// holds, the engine steps one iteration at a time so that the gate sees
// every iteration.
type PromptGate interface {
	HoldPrompts(e *Engine) bool
}

// SteadyGate is a PromptGate that can say for how long its answer stays
// the same while no engine's requests change, so that a lockstep group may
// fast-forward iterations past it (held ones included: a held iteration
// only decodes).
type SteadyGate interface {
	PromptGate
	// Steady is for how many iterations, the one just asked about
	// included, e would get the same answer if asked at each.
	Steady(e *Engine) int64
	// Skip tells the gate that e ran n more such iterations unasked.
	Skip(e *Engine, n int64)
}

// Request is one inference request as the engine sees it.
type Request struct {
	ID       int64
	ISL, OSL int
	// Arrival is when the request reached this engine.
	Arrival float64
	// FirstToken and Finish are set by the engine (Finish is the hand-off
	// time for prefill engines). A decode engine sets FirstToken when it
	// admits the request: the user's stream comes from the decode worker,
	// so the first token reaches the user no earlier.
	FirstToken float64
	Finish     float64
	// Worker is an opaque tag the caller may use (which engine served it).
	Worker int

	// Preemptions counts how often the request was evicted and recomputed.
	Preemptions int

	target      int // prompt tokens to (re)compute: ISL, or ISL+generated after a preemption
	prefilled   int
	generated   int
	finishStep  int64
	ctxAtJoin   int
	stepAtJoin  int64
	heapIndex   int
	chunkThisIt int
	reserved    int // cache tokens set aside at admission under ReserveFull
}

// Sink receives request events in time order. FirstToken is called when a
// request's first token is out: for a decode engine, when it admits one.
type Sink interface {
	FirstToken(r *Request, t float64)
	Finished(r *Request, t float64)
}

// Engine is one serving engine instance.
type Engine struct {
	cfg    Config
	cost   Cost
	sink   Sink
	ctxC   float64
	adv    float64 // tokens a decoding sequence gains per step
	window int     // keys a windowed layer's query sees; 0 if none

	waiting    fifo
	prefilling []*Request
	decoding   decodeHeap
	decodeStep int64
	ctxSum     float64
	kvPrefill  int // KV held by prefilling requests
	kvPending  int // prompt KV admitted requests will still allocate
	reserved   int // cache tokens the running requests set aside (ReserveFull)

	// Preemptions counts evictions.
	Preemptions int64

	busy      bool
	itStart   float64
	itEnd     float64
	itSteps   int64 // decode steps in this iteration (>1 when fast-forwarding)
	itFixed   float64
	itCtxSum  float64
	itDecodes int
	itChunks  []*Request
	itAsked   bool // the gate was asked about this iteration

	// group is the lockstep group of attention-DP ranks the engine is in,
	// and run the group's fast-forwarded run this iteration belongs to.
	group *Lockstep
	run   *groupRun

	// Iterations counts simulated iterations, each fast-forwarded step included.
	Iterations int64
	busyTime   float64
}

// New creates an idle engine that reports request events to sink.
func New(cfg Config, cost Cost, sink Sink) (*Engine, error) {
	if cfg.MaxBatchedTokens < 1 || cfg.MaxSeqs < 1 {
		return nil, fmt.Errorf("engine: maxBatchedTokens and maxSeqs must be >= 1")
	}
	if cfg.KVTokens < 1 {
		return nil, fmt.Errorf("engine: kvTokens must be >= 1")
	}
	if t := cfg.TokensPerStep; math.IsNaN(t) || t < 0 || t > 64 {
		return nil, fmt.Errorf("engine: tokensPerStep %g must be 0 to 64", t)
	}
	e := &Engine{cfg: cfg, cost: cost, sink: sink, ctxC: cost.DecodeCtxCost(), adv: max(1, cfg.TokensPerStep)}
	if w, ok := cost.(Windowed); ok {
		e.window = max(w.AttentionWindow(), 0)
	}
	return e, nil
}

// Generated is how many output tokens r has so far: the tokens it had when
// it joined decoding plus one per decode step since, or what it had before
// it (re)entered the queue. Real-time callers stream by it.
func (e *Engine) Generated(r *Request) int {
	if i := r.heapIndex; i >= 0 && i < len(e.decoding) && e.decoding[i] == r {
		return min(r.OSL, r.generated+e.gainedBy(r, e.decodeStep))
	}
	return r.generated
}

// Role returns the engine's role.
func (e *Engine) Role() Role { return e.cfg.Role }

// Running is the number of admitted requests; Waiting those queued for admission.
func (e *Engine) Running() int { return len(e.prefilling) + len(e.decoding) }

// Waiting is the number of requests not yet admitted.
func (e *Engine) Waiting() int { return e.waiting.len() }

// Decoding is the number of requests in their decode phase.
func (e *Engine) Decoding() int { return len(e.decoding) }

// Prefilling is the number of admitted requests still computing their prompt.
func (e *Engine) Prefilling() int { return len(e.prefilling) }

// KVUsed is the reserved share of the KV cache, 0..1.
func (e *Engine) KVUsed() float64 { return e.kvUsed() / float64(e.cfg.KVTokens) }

func (e *Engine) kvUsed() float64 { return e.ctxSum + float64(e.kvPrefill) }

// BusyTime is the simulated time spent in iterations so far.
func (e *Engine) BusyTime() float64 { return e.busyTime }

// Fits reports whether a request of this size can ever be admitted.
func (e *Engine) Fits(isl, osl int) bool { return isl+osl <= e.cfg.KVTokens }

// NextEvent is the time the current iteration ends, +Inf when idle.
func (e *Engine) NextEvent() float64 {
	if !e.busy {
		return math.Inf(1)
	}
	return e.itEnd
}

// Submit hands a request to the engine at time now. A request too large for
// the KV cache is rejected with an error rather than queued forever.
func (e *Engine) Submit(r *Request, now float64) error {
	if !e.Fits(r.ISL, r.OSL) {
		return fmt.Errorf("request %d: %d prompt + %d output tokens exceed the engine's KV cache of %d tokens", r.ID, r.ISL, r.OSL, e.cfg.KVTokens)
	}
	if r.ISL < 1 || r.OSL < 1 {
		return fmt.Errorf("request %d: isl and osl must be >= 1", r.ID)
	}
	r.Arrival = now
	r.prefilled, r.generated, r.target = 0, 0, r.ISL
	e.waiting.push(r)
	if !e.busy {
		if e.group != nil {
			// The rank joins its peers' iteration in progress.
			e.group.truncate(now)
		}
		e.start(now)
	} else if e.itSteps > 1 {
		e.truncateRun(now)
	}
	return nil
}

// Abort ends a request whose client went away, keeping the tokens it has,
// as vLLM frees an aborted request: one still waiting leaves the queue at
// once, one in prefill finishes when its prompt chunk ends, one decoding
// finishes after the step in progress (a fast-forwarded run is cut there).
func (e *Engine) Abort(r *Request, now float64) {
	q := &e.waiting
	for i := q.head; i < len(q.items); i++ {
		if q.items[i] != r {
			continue
		}
		copy(q.items[i:], q.items[i+1:])
		q.items[len(q.items)-1] = nil
		q.items = q.items[:len(q.items)-1]
		r.OSL = max(r.generated, 1)
		r.Finish = now
		e.sink.Finished(r, now)
		return
	}
	if i := r.heapIndex; i >= 0 && i < len(e.decoding) && e.decoding[i] == r {
		if r.finishStep > e.decodeStep+1 {
			r.OSL = max(1, min(r.OSL, r.generated+e.gainedBy(r, e.decodeStep+1)))
			r.finishStep = e.decodeStep + 1
			heap.Fix(&e.decoding, i)
			if e.busy && e.itSteps > 1 {
				e.truncateRun(now)
			}
		}
		return
	}
	for _, p := range e.prefilling {
		if p == r {
			r.OSL = max(r.generated, 1)
			return
		}
	}
}

// Advance completes the iteration ending at NextEvent, emits its events and
// starts the next one.
func (e *Engine) Advance() {
	sink := e.sink
	if !e.busy {
		return
	}
	t := e.itEnd
	e.busy = false
	e.busyTime += t - e.itStart
	e.Iterations += e.itSteps
	if s, ok := e.cfg.Gate.(SteadyGate); ok && e.itAsked && e.itSteps > 1 {
		s.Skip(e, e.itSteps-1)
	}
	if e.itDecodes > 0 {
		e.decodeStep += e.itSteps
		e.ctxSum += e.adv * float64(e.itSteps) * float64(e.itDecodes)
		for len(e.decoding) > 0 && e.decoding[0].finishStep <= e.decodeStep {
			r := heap.Pop(&e.decoding).(*Request)
			e.ctxSum -= e.held(r)
			e.release(r)
			r.Finish = t
			sink.Finished(r, t)
		}
	}
	for _, r := range e.itChunks {
		r.prefilled += r.chunkThisIt
		e.kvPrefill += r.chunkThisIt
		e.kvPending -= r.chunkThisIt
		r.chunkThisIt = 0
		if r.prefilled < r.target {
			continue
		}
		e.removePrefilling(r)
		e.kvPrefill -= r.prefilled
		if r.generated == 0 {
			r.generated = 1
			r.FirstToken = t
			sink.FirstToken(r, t)
		}
		if e.cfg.Role == Prefill || r.generated >= r.OSL {
			e.release(r)
			r.Finish = t
			sink.Finished(r, t)
			continue
		}
		e.joinDecode(r, r.target+1, r.OSL-r.generated)
	}
	e.itChunks = e.itChunks[:0]
	e.start(t)
}

func (e *Engine) joinDecode(r *Request, ctx, remaining int) {
	r.ctxAtJoin = ctx
	r.stepAtJoin = e.decodeStep
	r.finishStep = e.decodeStep + int64(math.Ceil(float64(remaining)/e.adv-1e-9))
	e.ctxSum += float64(ctx)
	heap.Push(&e.decoding, r)
}

// held is the cache a decoding request holds: its context when it joined
// and what it gained each step since (ctxSum adds the same).
func (e *Engine) held(r *Request) float64 {
	return float64(r.ctxAtJoin) + e.adv*float64(e.decodeStep-r.stepAtJoin)
}

// gainedBy is the whole tokens a decoding request has generated since it
// joined, once decode step step is done.
func (e *Engine) gainedBy(r *Request, step int64) int {
	return int(e.adv*float64(step-r.stepAtJoin) + 1e-9)
}

// preemptNewest evicts the most recently joined decoding request; it is
// recomputed from its prompt and the tokens it already generated.
func (e *Engine) preemptNewest() {
	newest := 0
	for i, r := range e.decoding {
		if r.stepAtJoin > e.decoding[newest].stepAtJoin || r.stepAtJoin == e.decoding[newest].stepAtJoin && r.ID > e.decoding[newest].ID {
			newest = i
		}
	}
	r := heap.Remove(&e.decoding, newest).(*Request)
	e.ctxSum -= e.held(r)
	e.release(r)
	r.generated = min(r.generated+e.gainedBy(r, e.decodeStep), r.OSL-1)
	r.target = r.ISL + r.generated
	r.prefilled = 0
	r.Preemptions++
	e.Preemptions++
	e.waiting.pushFront(r)
}

// reservation is the cache a request sets aside under ReserveFull: its
// prompt and every output token, or only the prompt and the first token on
// a prefill engine, which hands the request off after it.
func (e *Engine) reservation(r *Request) int {
	if e.cfg.Role == Prefill {
		return r.ISL + 1
	}
	return r.ISL + r.OSL
}

// fits says whether the cache can take r now: its whole reservation
// beside the others' under ReserveFull, else what it still has to compute
// (its prompt's KV on a decode engine) with headroom for one decode step of
// everyone running.
func (e *Engine) fits(r *Request) bool {
	if e.cfg.ReserveFull {
		return e.reserved+e.reservation(r) <= e.cfg.KVTokens
	}
	need := float64(r.target - r.prefilled)
	if e.cfg.Role == Decode {
		need = float64(r.ISL + 1)
	}
	return e.kvUsed()+float64(e.kvPending)+need+e.adv*float64(len(e.decoding)+1) <= float64(e.cfg.KVTokens)
}

// release returns what r reserved at admission.
func (e *Engine) release(r *Request) {
	e.reserved -= r.reserved
	r.reserved = 0
}

func (e *Engine) removePrefilling(r *Request) {
	for i, p := range e.prefilling {
		if p == r {
			copy(e.prefilling[i:], e.prefilling[i+1:])
			e.prefilling = e.prefilling[:len(e.prefilling)-1]
			return
		}
	}
}

// admit moves waiting requests in FCFS order into the running set while a
// sequence slot is free and the cache holds their prompt with headroom for
// one decode step of everyone running, or, under ReserveFull, their whole
// size beside what the running requests set aside.
func (e *Engine) admit(now float64) {
	for e.waiting.len() > 0 {
		r := e.waiting.peek()
		if e.Running() >= e.cfg.MaxSeqs || !e.fits(r) {
			return
		}
		e.waiting.pop()
		if e.cfg.ReserveFull {
			r.reserved = e.reservation(r)
			e.reserved += r.reserved
		}
		if e.cfg.Role == Decode {
			// The prompt's KV arrived with the request; the first token came from the prefill engine.
			if r.generated == 0 {
				// First admission (not a return after preemption).
				r.generated = 1
				r.FirstToken = now
				e.sink.FirstToken(r, now)
			}
			if r.generated >= r.OSL {
				e.release(r)
				r.Finish = now
				e.sink.Finished(r, now)
				continue
			}
			e.joinDecode(r, r.ISL+r.generated, r.OSL-r.generated)
			continue
		}
		e.prefilling = append(e.prefilling, r)
		e.kvPending += r.target - r.prefilled
	}
}

func (e *Engine) start(now float64) {
	e.run = nil
	// A decode step adds its tokens to every sequence: evict until it fits.
	for len(e.decoding) > 0 && e.kvUsed()+e.adv*float64(len(e.decoding)) > float64(e.cfg.KVTokens) {
		e.preemptNewest()
	}
	e.itAsked = e.cfg.Gate != nil && e.waiting.len() > 0 && len(e.decoding) > 0
	held := e.itAsked && e.cfg.Gate.HoldPrompts(e)
	if !held {
		e.admit(now)
	}
	decodes := len(e.decoding)
	budget := e.cfg.MaxBatchedTokens - decodes
	var b perf.Batch
	b.DecodeSeqs = decodes
	b.DecodeCtx = e.ctxSum
	b.Sampled = decodes
	for _, r := range e.prefilling {
		if budget <= 0 {
			break
		}
		c := min(r.target-r.prefilled, budget)
		budget -= c
		r.chunkThisIt = c
		e.itChunks = append(e.itChunks, r)
		AddChunks(&b, 1, r.prefilled, c, e.window, r.prefilled+c == r.target)
	}
	if decodes == 0 && len(e.itChunks) == 0 {
		return // idle
	}
	e.busy = true
	e.itStart = now
	e.itDecodes = decodes
	e.itCtxSum = e.ctxSum
	e.itSteps = 1
	e.itFixed = e.cost.FixedStepTime(b)
	if len(e.itChunks) == 0 && !e.cfg.NoFastForward && !held && e.group == nil {
		// A lockstep group fast-forwards its ranks itself.
		e.itSteps = e.decodeRunSteps()
	}
	e.itEnd = now + e.elapsed(e.itSteps)
}

// decodeRunSteps is how many identical decode-only iterations can run from
// here: until the next completion or until the cache is full.
func (e *Engine) decodeRunSteps() int64 {
	steps := max(1, e.decoding[0].finishStep-e.decodeStep)
	if room := int64((float64(e.cfg.KVTokens) - e.kvUsed()) / (e.adv * float64(len(e.decoding)))); room < steps {
		steps = max(1, room)
	}
	return steps
}

// gateSteps is how many iterations from this one the gate would answer as
// it did: without limit when it is not asked (no prompt waits), as the gate
// says when it can tell, else one.
func (e *Engine) gateSteps() int64 {
	if !e.itAsked {
		return math.MaxInt64
	}
	if s, ok := e.cfg.Gate.(SteadyGate); ok {
		return max(1, s.Steady(e))
	}
	return 1
}

// truncateRun cuts the fast-forwarded run in progress at now: the whole
// group's when the engine steps in lockstep.
func (e *Engine) truncateRun(now float64) {
	if e.group != nil {
		e.group.truncate(now)
		return
	}
	e.truncate(now)
}

// Stretch makes the iteration in progress end no earlier than t: a rank
// waiting for its peers in a lockstep collective. In a fast-forwarded run
// the last step stretches.
func (e *Engine) Stretch(t float64) {
	if e.busy && t > e.itEnd {
		e.itEnd = t
	}
}

// IterationsAt counts the iterations finished by time now, including the
// finished steps of a fast-forwarded run still in progress.
func (e *Engine) IterationsAt(now float64) int64 {
	n := e.Iterations
	if e.busy && e.itSteps > 1 {
		done := int64(0)
		for lo, hi := int64(0), e.itSteps; lo <= hi; {
			mid := (lo + hi) / 2
			if e.runElapsed(mid) <= now-e.itStart {
				done, lo = mid, mid+1
			} else {
				hi = mid - 1
			}
		}
		n += min(done, e.itSteps-1)
	}
	return n
}

// runElapsed is the time of the first k steps of the current iteration:
// the group's when it is part of a group's run.
func (e *Engine) runElapsed(k int64) float64 {
	if e.run != nil {
		return e.run.elapsed(k)
	}
	return e.elapsed(k)
}

// elapsed is the time of the first k decode-only steps of the current iteration.
func (e *Engine) elapsed(k int64) float64 {
	kf := float64(k)
	return kf*e.itFixed + e.ctxC*(kf*e.itCtxSum+e.adv*float64(e.itDecodes)*kf*(kf-1)/2)
}

// truncate ends a fast-forwarded run at the first step boundary at or after
// now, so that a new arrival joins the next iteration as it would live.
func (e *Engine) truncate(now float64) {
	dt := now - e.itStart
	if dt <= 0 {
		e.itSteps = 1
		e.itEnd = e.itStart + e.elapsed(1)
		return
	}
	// Solve a*k^2 + b*k = dt for the step in progress.
	a := e.ctxC * e.adv * float64(e.itDecodes) / 2
	b := e.itFixed + e.ctxC*e.itCtxSum - a
	var k float64
	if a > 0 {
		k = (-b + math.Sqrt(b*b+4*a*dt)) / (2 * a)
	} else {
		k = dt / b
	}
	steps := int64(math.Ceil(k - 1e-9))
	for steps > 1 && e.elapsed(steps-1) >= dt {
		steps--
	}
	for e.elapsed(steps) < dt {
		steps++
	}
	if steps < 1 {
		steps = 1
	}
	if steps < e.itSteps {
		e.itSteps = steps
		e.itEnd = e.itStart + e.elapsed(steps)
	}
}

// AddChunks adds n prompt chunks of c tokens, each after ctx cached ones,
// to the iteration b: their tokens, cached context, causal query-key pairs
// (also under window when it is above 0) and, when they finish their
// prompts (last), a sampled token each.
func AddChunks(b *perf.Batch, n, ctx, c, window int, last bool) {
	k := float64(n)
	b.PrefillTokens += n * c
	b.PrefillSeqs += n
	b.PrefillCtx += k * float64(ctx)
	b.PrefillPairs += k * float64(c) * (float64(ctx) + float64(c)/2)
	if window > 0 {
		b.PrefillSlidingPairs += k * WindowPairs(ctx, c, window)
	}
	if last {
		b.Sampled += n
	}
}

// WindowPairs is the query-key pairs of a prompt chunk of c tokens after ctx
// cached ones when each query sees at most window keys: the causal pairs
// below the window, and window pairs for every query past it.
func WindowPairs(ctx, c, window int) float64 {
	end := ctx + c
	var pairs float64
	if m := min(end, window); m > ctx {
		pairs += float64(m-ctx) * float64(ctx+m) / 2
	}
	if past := end - max(ctx, window); past > 0 {
		pairs += float64(past) * float64(window)
	}
	return pairs
}

// WorkerConfig is the Config of an engine of role run by worker w: its
// token budget, sequence cap and KV capacity, its speculative step and how
// it admits requests into the cache.
func WorkerConfig(role Role, w *perf.Worker) Config {
	c, m := w.Config(), w.Memory()
	return Config{Role: role, MaxBatchedTokens: c.MaxBatchedTokens, MaxSeqs: c.MaxSeqs, KVTokens: m.KVTokens,
		TokensPerStep: w.TokensPerStep(), ReserveFull: w.ReservesFullRequest()}
}
