package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Under ReserveFull a cache too small for everyone queues the late requests
// instead of admitting them and evicting one later: the same load that
// TestPreemptionKeepsEveryRequest preempts runs four at a time here.
func TestReserveFullQueuesInsteadOfEvicting(t *testing.T) {
	for _, full := range []bool{false, true} {
		rec := newRecorder()
		e, err := New(Config{MaxBatchedTokens: 4096, MaxSeqs: 64, KVTokens: 4000, ReserveFull: full}, linearCost{1e-3, 1e-6, 1e-9}, rec)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 8; i++ {
			if err := e.Submit(&Request{ID: int64(i), ISL: 600, OSL: 400}, 0); err != nil {
				t.Fatal(err)
			}
		}
		peak := drainPeak(t, e)
		if full && peak != 4 {
			t.Fatalf("reserving 1,000 tokens each in 4,000: at most %d running, want 4", peak)
		}
		if !full && peak <= 4 {
			t.Fatalf("allocating on demand: at most %d running, want more than the 4 whole requests that fit", peak)
		}
		if len(rec.done) != 8 {
			t.Fatalf("full %v: %d of 8 requests finished", full, len(rec.done))
		}
		if full != (e.Preemptions == 0) {
			t.Fatalf("full %v: %d preemptions", full, e.Preemptions)
		}
		if full {
			firstDone := math.Inf(1)
			for id := int64(0); id < 4; id++ {
				firstDone = min(firstDone, rec.done[id])
			}
			for id := int64(4); id < 8; id++ {
				if rec.first[id] < firstDone {
					t.Errorf("request %d had its first token at %g, before any reservation came back (%g)", id, rec.first[id], firstDone)
				}
			}
		}
		if e.reserved != 0 || e.KVUsed() != 0 {
			t.Fatalf("full %v: %d reserved, %g of the cache used after drain", full, e.reserved, e.KVUsed())
		}
	}
}

// drainPeak drains e and returns the most requests it ran at once.
func drainPeak(t *testing.T, e *Engine) int {
	t.Helper()
	peak := e.Running()
	for i := 0; !math.IsInf(e.NextEvent(), 1); i++ {
		if i > 10_000_000 {
			t.Fatal("engine did not drain")
		}
		e.Advance()
		peak = max(peak, e.Running())
	}
	return peak
}

// A prefill engine hands a request off after its first token, so it sets
// aside the prompt and that token only: two prompts of 400 run together in
// a 1,000-token cache although their whole requests would not fit.
func TestReserveFullPrefillReservesThePrompt(t *testing.T) {
	for _, role := range []Role{Prefill, Aggregated} {
		rec := newRecorder()
		// Prompts take two iterations, so the second is admitted while the first still runs.
		e, err := New(Config{Role: role, MaxBatchedTokens: 256, MaxSeqs: 8, KVTokens: 1000, ReserveFull: true}, linearCost{1e-3, 1e-5, 0}, rec)
		if err != nil {
			t.Fatal(err)
		}
		for id := int64(1); id <= 2; id++ {
			if err := e.Submit(&Request{ID: id, ISL: 400, OSL: 300}, 0); err != nil {
				t.Fatal(err)
			}
		}
		want := 1
		if role == Prefill {
			want = 2
		}
		if peak := drainPeak(t, e); peak != want || len(rec.done) != 2 {
			t.Errorf("role %v: at most %d running (want %d), %d of 2 finished", role, peak, want, len(rec.done))
		}
	}
}

// checkReservations is the oracle: what the engine holds reserved must be
// the whole size of every running request (the prompt and first token on
// a prefill engine) and fit the cache.
func checkReservations(t *testing.T, seed uint64, e *Engine, size map[*Request]int) {
	t.Helper()
	want := 0
	for _, r := range e.prefilling {
		want += size[r]
	}
	for _, r := range e.decoding {
		want += size[r]
	}
	if e.reserved != want || e.reserved > e.cfg.KVTokens {
		t.Fatalf("seed %d: %d tokens reserved, running requests need %d, cache %d", seed, e.reserved, want, e.cfg.KVTokens)
	}
}

// Random loads on random engines, every role, some requests aborted: a
// reserving engine never evicts, never books more than its cache, finishes
// everything and gives every reservation back.
func TestReserveFullNeverOverbooks(t *testing.T) {
	cost := linearCost{1e-3, 1e-5, 1e-8}
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		role := []Role{Aggregated, Prefill, Decode}[seed%3]
		cfg := Config{Role: role, MaxBatchedTokens: 64 + rng.IntN(2048), MaxSeqs: 1 + rng.IntN(32), KVTokens: 2000 + rng.IntN(20000), ReserveFull: true}
		rec := newRecorder()
		e, err := New(cfg, cost, rec)
		if err != nil {
			t.Fatal(err)
		}
		size := map[*Request]int{}
		var sent []*Request
		step := func() {
			e.Advance()
			checkReservations(t, seed, e, size)
		}
		for i, a := range randomArrivals(rng) {
			for e.NextEvent() <= a.at {
				step()
			}
			r := &Request{ID: int64(i), ISL: a.isl, OSL: a.osl}
			if !e.Fits(r.ISL, r.OSL) {
				continue
			}
			size[r] = r.ISL + r.OSL
			if role == Prefill {
				size[r] = r.ISL + 1
			}
			if err := e.Submit(r, a.at); err != nil {
				t.Fatal(err)
			}
			checkReservations(t, seed, e, size)
			sent = append(sent, r)
			if rng.IntN(10) == 0 {
				e.Abort(sent[rng.IntN(len(sent))], a.at)
			}
		}
		for i := 0; !math.IsInf(e.NextEvent(), 1); i++ {
			if i > 10_000_000 {
				t.Fatal("engine did not drain")
			}
			step()
		}
		if len(rec.done) != len(sent) || e.Preemptions != 0 || e.reserved != 0 {
			t.Fatalf("seed %d: %d of %d finished, %d preemptions, %d still reserved", seed, len(rec.done), len(sent), e.Preemptions, e.reserved)
		}
	}
}

// The decode fast-forward must give the same events with reservations as
// stepping one iteration at a time does.
func TestReserveFullFastForwardMatchesPlainLoop(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		cfg := Config{MaxBatchedTokens: 64 + rng.IntN(2048), MaxSeqs: 1 + rng.IntN(32), KVTokens: 2000 + rng.IntN(20000), ReserveFull: true}
		if e := checkFastForward(t, seed, rng, cfg); e.Preemptions != 0 {
			t.Fatalf("seed %d: %d preemptions while reserving", seed, e.Preemptions)
		}
	}
}
