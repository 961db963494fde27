package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSpeculativeStepsAndCache checks a decode under speculative decoding by
// hand: 2.5 tokens a step means ceil(9/2.5) = 4 steps for the 9 tokens
// after the first, each reading a context that grew 2.5 a step.
func TestSpeculativeStepsAndCache(t *testing.T) {
	cost := linearCost{base: 0.001, perToken: 1e-5, perCtx: 1e-7}
	rec := newRecorder()
	e, err := New(Config{MaxBatchedTokens: 512, MaxSeqs: 8, KVTokens: 10000, TokensPerStep: 2.5}, cost, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Submit(&Request{ID: 1, ISL: 100, OSL: 10}, 0); err != nil {
		t.Fatal(err)
	}
	drain(t, e)
	want := rec.first[1]
	for step := 0; step < 4; step++ {
		want += 0.001 + 1e-5 + 1e-7*(101+2.5*float64(step))
	}
	if d := rec.done[1] - want; math.Abs(d) > 1e-12 {
		t.Fatalf("finished at %.12f, want %.12f (4 steps)", rec.done[1], want)
	}
	if e.kvUsed() != 0 {
		t.Fatalf("cache holds %g tokens after the last request left, want 0", e.kvUsed())
	}
}

// TestSpeculativeFastForwardMatchesPlainLoop is the brute-force oracle of
// the closed-form fast-forward when a step gains a fraction of tokens.
func TestSpeculativeFastForwardMatchesPlainLoop(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		cfg := Config{MaxBatchedTokens: 64 + rng.IntN(2048), MaxSeqs: 1 + rng.IntN(32), KVTokens: 4000 + rng.IntN(40000),
			TokensPerStep: 1 + 3*rng.Float64()}
		if u := checkFastForward(t, seed, rng, cfg).kvUsed(); math.Abs(u) > 1e-6 {
			t.Fatalf("seed %d: cache holds %g tokens after every request left", seed, u)
		}
	}
}

// TestSpeculationShortensDecode: the same requests finish sooner when each
// step gains more tokens, and no sooner than the step count allows.
func TestSpeculationShortensDecode(t *testing.T) {
	finish := func(adv float64) float64 {
		rec := newRecorder()
		e, err := New(Config{MaxBatchedTokens: 4096, MaxSeqs: 16, KVTokens: 100000, TokensPerStep: adv},
			linearCost{base: 0.01, perToken: 1e-5, perCtx: 1e-8}, rec)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(0); i < 4; i++ {
			if err := e.Submit(&Request{ID: i, ISL: 200, OSL: 401}, 0); err != nil {
				t.Fatal(err)
			}
		}
		drain(t, e)
		return rec.done[3]
	}
	one, two := finish(0), finish(2)
	if !(two < 0.6*one) || !(two > 0.4*one) {
		t.Fatalf("2 tokens a step finish at %g, 1 a step at %g: want about half", two, one)
	}
}

func TestTokensPerStepRejected(t *testing.T) {
	for _, v := range []float64{-1, math.NaN(), 65} {
		if _, err := New(Config{MaxBatchedTokens: 8, MaxSeqs: 1, KVTokens: 100, TokensPerStep: v}, linearCost{}, newRecorder()); err == nil {
			t.Errorf("tokensPerStep %g accepted", v)
		}
	}
}
