package perf

import "math"

// Expert parallelism spreads the routed experts over ranks, and a layer
// ends when its busiest rank does: the combine (all-to-all or all-reduce)
// waits for every rank's experts. Routing is random per token, so at a
// few tokens per step one rank draws well more experts than the mean
// (8 tokens of top-8 over 8 ranks of 16 experts: 6.5 active experts on
// the mean rank, about 9 on the busiest). The kernel tables show it on
// every Hopper system: their skewed-routing rows under expert parallelism
// take 1.5-3 times their balanced rows at 1-8 tokens.

// busiestRank returns the active experts and routed token copies of the
// busiest of the shape's Ranks, as totals over the ranks (Ranks times the
// busiest rank's), so that they stand in for the group-wide figures the
// mean rank is priced from. Each rank's count is taken as normal with the
// mean and variance of random routing, and the busiest as the expected
// largest of Ranks such draws, capped by what a rank can hold.
func (s MoEShape) busiestRank() (active, picks float64) {
	active, picks = s.ActiveExperts(), s.Tokens*s.TopK
	r := s.Ranks
	if s.Balanced || r <= 1 || s.Experts < r || s.Tokens <= 0 {
		return active, picks
	}
	n := s.Experts / r      // experts a rank holds
	p := active / s.Experts // chance that an expert is active
	share := n / s.Experts  // the share of a token's picks a rank holds, at random
	c := expectedMaxNormal(r)
	// Active experts: n nearly independent indicators.
	a := math.Min(n, n*p+c*math.Sqrt(n*p*(1-p)))
	// Picks: each token draws TopK distinct experts, so a rank's count per
	// token is hypergeometric.
	v := s.TopK * share * (1 - share)
	if s.Experts > 1 {
		v *= (s.Experts - s.TopK) / (s.Experts - 1)
	}
	k := math.Min(s.Tokens*math.Min(s.TopK, n), s.Tokens*s.TopK*share+c*math.Sqrt(s.Tokens*v))
	return math.Max(active, a*r), math.Max(picks, k*r)
}

// expectedMaxNormal is the expected largest of n standard normal draws,
// by Blom's approximation (within 0.02 of the exact value up to n = 1024).
func expectedMaxNormal(n float64) float64 {
	if n <= 1 {
		return 0
	}
	q := (n - 0.375) / (n + 0.25)
	return math.Sqrt2 * math.Erfinv(2*q-1)
}
