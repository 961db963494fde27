package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// linearCost is a transparent cost: a fixed part per iteration, per token
// and per context token, so expected times can be computed by hand.
type linearCost struct{ base, perToken, perCtx float64 }

func (c linearCost) FixedStepTime(b perf.Batch) float64 {
	return c.base + c.perToken*float64(b.PrefillTokens+b.DecodeSeqs)
}
func (c linearCost) DecodeCtxCost() float64 { return c.perCtx }

type recorder struct {
	first, done map[int64]float64
	order       []int64
}

func newRecorder() *recorder {
	return &recorder{first: map[int64]float64{}, done: map[int64]float64{}}
}
func (r *recorder) FirstToken(q *Request, t float64) { r.first[q.ID] = t }
func (r *recorder) Finished(q *Request, t float64) {
	r.done[q.ID] = t
	r.order = append(r.order, q.ID)
}

func drain(t *testing.T, e *Engine) {
	t.Helper()
	for i := 0; !math.IsInf(e.NextEvent(), 1); i++ {
		if i > 10_000_000 {
			t.Fatal("engine did not drain")
		}
		e.Advance()
	}
}

func TestSingleRequestTiming(t *testing.T) {
	cost := linearCost{base: 0.001, perToken: 1e-5, perCtx: 1e-7}
	rec := newRecorder()
	e, err := New(Config{MaxBatchedTokens: 512, MaxSeqs: 8, KVTokens: 10000}, cost, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Submit(&Request{ID: 1, ISL: 1000, OSL: 4}, 0); err != nil {
		t.Fatal(err)
	}
	drain(t, e)
	// Prefill: chunks of 512 and 488 tokens.
	wantFirst := (0.001 + 512e-5) + (0.001 + 488e-5)
	if d := rec.first[1] - wantFirst; math.Abs(d) > 1e-12 {
		t.Fatalf("first token at %g, want %g", rec.first[1], wantFirst)
	}
	// Three decode steps with context 1001, 1002, 1003.
	want := wantFirst
	for ctx := 1001; ctx <= 1003; ctx++ {
		want += 0.001 + 1e-5 + 1e-7*float64(ctx)
	}
	if d := rec.done[1] - want; math.Abs(d) > 1e-12 {
		t.Fatalf("finished at %g, want %g", rec.done[1], want)
	}
}

// arrival is one request of a random workload.
type arrival struct {
	at       float64
	isl, osl int
}

// randomArrivals is 60 requests with exponential gaps and random sizes.
func randomArrivals(rng *rand.Rand) []arrival {
	var arr []arrival
	at := 0.0
	for i := 0; i < 60; i++ {
		at += rng.ExpFloat64() * 0.05
		arr = append(arr, arrival{at, 1 + rng.IntN(1500), 1 + rng.IntN(300)})
	}
	return arr
}

// runArrivals submits arr to a fresh engine as their times come and drains it.
func runArrivals(t *testing.T, cfg Config, cost Cost, arr []arrival) (*recorder, *Engine) {
	t.Helper()
	rec := newRecorder()
	e, err := New(cfg, cost, rec)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range arr {
		for e.NextEvent() <= a.at {
			e.Advance()
		}
		if err := e.Submit(&Request{ID: int64(i), ISL: a.isl, OSL: a.osl}, a.at); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, e)
	return rec, e
}

// checkSameEvents fails unless ff and plain finished every request of n,
// at the same times (and, with first, gave first tokens at the same times).
func checkSameEvents(t *testing.T, seed uint64, n int, ff, plain *recorder, first bool) {
	t.Helper()
	if len(ff.done) != n || len(plain.done) != n {
		t.Fatalf("seed %d: completed %d / %d of %d", seed, len(ff.done), len(plain.done), n)
	}
	for id, want := range plain.done {
		if got := ff.done[id]; math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("seed %d request %d: finish %.12f with fast-forward, %.12f without", seed, id, got, want)
		}
		if got, want := ff.first[id], plain.first[id]; first && math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("seed %d request %d: first token %.12f vs %.12f", seed, id, got, want)
		}
	}
}

// TestFastForwardMatchesPlainLoop is the brute-force oracle for the
// closed-form fast-forward: random arrivals and sizes, both engines must
// produce the same event times.
func TestFastForwardMatchesPlainLoop(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := Config{MaxBatchedTokens: 64 + rng.IntN(2048), MaxSeqs: 1 + rng.IntN(32), KVTokens: 4000 + rng.IntN(40000)}
		checkFastForward(t, seed, rng, cfg)
	}
}

// checkFastForward runs a random workload on cfg with and without the
// fast-forward and fails unless the events match; it returns the engine
// that fast-forwarded.
func checkFastForward(t *testing.T, seed uint64, rng *rand.Rand, cfg Config) *Engine {
	t.Helper()
	cost := linearCost{base: 1e-3 * rng.Float64(), perToken: 1e-5 * rng.Float64(), perCtx: 1e-7 * rng.Float64()}
	arr := randomArrivals(rng)
	ff, eff := runArrivals(t, cfg, cost, arr)
	cfg.NoFastForward = true
	plain, _ := runArrivals(t, cfg, cost, arr)
	checkSameEvents(t, seed, len(arr), ff, plain, true)
	return eff
}

func TestPreemptionKeepsEveryRequest(t *testing.T) {
	rec := newRecorder()
	// 8 requests of 600+400 tokens cannot all grow in a 4000-token cache.
	e, err := New(Config{MaxBatchedTokens: 4096, MaxSeqs: 64, KVTokens: 4000}, linearCost{1e-3, 1e-6, 1e-9}, rec)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		if err := e.Submit(&Request{ID: int64(i), ISL: 600, OSL: 400}, 0); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, e)
	if len(rec.done) != 8 {
		t.Fatalf("%d of 8 requests finished", len(rec.done))
	}
	if e.Preemptions == 0 {
		t.Fatal("expected preemptions with an undersized cache")
	}
	if e.KVUsed() != 0 || e.kvPending != 0 {
		t.Fatalf("cache not empty after drain: %g", e.KVUsed())
	}
}

func TestRolesAndRejections(t *testing.T) {
	cost := linearCost{1e-3, 1e-5, 0}
	rec := newRecorder()
	p, _ := New(Config{Role: Prefill, MaxBatchedTokens: 256, MaxSeqs: 4, KVTokens: 1000}, cost, rec)
	if err := p.Submit(&Request{ID: 1, ISL: 300, OSL: 50}, 0); err != nil {
		t.Fatal(err)
	}
	drain(t, p)
	if rec.first[1] != rec.done[1] || rec.done[1] == 0 {
		t.Fatalf("prefill engine should hand off at the first token: first %g done %g", rec.first[1], rec.done[1])
	}
	if err := p.Submit(&Request{ID: 2, ISL: 900, OSL: 200}, 1); err == nil {
		t.Fatal("a request larger than the cache must be rejected")
	}
	rec = newRecorder()
	d, _ := New(Config{Role: Decode, MaxBatchedTokens: 256, MaxSeqs: 4, KVTokens: 1000}, cost, rec)
	if err := d.Submit(&Request{ID: 3, ISL: 300, OSL: 11}, 0); err != nil {
		t.Fatal(err)
	}
	drain(t, d)
	// Ten decode steps of one token each.
	if want := 10 * (1e-3 + 1e-5); math.Abs(rec.done[3]-want) > 1e-12 {
		t.Fatalf("decode finished at %g, want %g", rec.done[3], want)
	}
	// A decode engine reports its admission as the first token: with one
	// slot, the second request is admitted when the first finishes.
	rec = newRecorder()
	one, _ := New(Config{Role: Decode, MaxBatchedTokens: 256, MaxSeqs: 1, KVTokens: 1000}, cost, rec)
	for id := int64(4); id <= 5; id++ {
		if err := one.Submit(&Request{ID: id, ISL: 300, OSL: 11}, 0); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, one)
	if at, ok := rec.first[4]; !ok || at != 0 || rec.first[5] != rec.done[4] || rec.done[4] == 0 {
		t.Fatalf("decode admissions at %g and %g, want 0 and the first's finish %g", rec.first[4], rec.first[5], rec.done[4])
	}
	if _, err := New(Config{MaxBatchedTokens: 0, MaxSeqs: 1, KVTokens: 1}, cost, rec); err == nil {
		t.Fatal("zero token budget must be rejected")
	}
}

// An aborted request ends soon with the tokens it has, whether it waits,
// prefills or decodes, and the cache is whole again afterwards.
func TestAbort(t *testing.T) {
	cost := linearCost{base: 0.001, perToken: 1e-5, perCtx: 1e-7}
	rec := newRecorder()
	e, err := New(Config{MaxBatchedTokens: 512, MaxSeqs: 2, KVTokens: 100000}, cost, rec)
	if err != nil {
		t.Fatal(err)
	}
	decoding := &Request{ID: 1, ISL: 100, OSL: 100000 - 200}
	prefilling := &Request{ID: 2, ISL: 4000, OSL: 50}
	waiting := &Request{ID: 3, ISL: 100, OSL: 50}
	for _, r := range []*Request{decoding, prefilling, waiting} {
		if err := e.Submit(r, 0); err != nil {
			t.Fatal(err)
		}
	}
	for e.NextEvent() < 0.05 { // the first request decodes, the second prefills, the third waits (max 2 running)
		e.Advance()
	}
	now := e.NextEvent() - 1e-6
	e.Abort(waiting, now)
	if _, ok := rec.done[3]; !ok || e.Waiting() != 0 {
		t.Fatalf("the waiting request did not leave at once (waiting %d)", e.Waiting())
	}
	e.Abort(decoding, now)
	e.Abort(prefilling, now)
	drain(t, e)
	if rec.done[1] > now+0.1 || decoding.OSL >= 100000-200 {
		t.Errorf("the decoding request finished at %g with %d tokens; want right after %g", rec.done[1], decoding.OSL, now)
	}
	if _, ok := rec.done[2]; !ok || prefilling.OSL != 1 {
		t.Errorf("the prefilling request: done %v, %d tokens; want it ended after its prompt with one", ok, prefilling.OSL)
	}
	if e.kvUsed() != 0 || e.Running() != 0 {
		t.Errorf("after the aborts: KV %g, running %d", e.kvUsed(), e.Running())
	}
}
