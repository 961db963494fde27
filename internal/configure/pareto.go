package configure

import (
	"fmt"
	"sort"
)

// pareto collects every measured operating point on the plane of tokens/s
// per GPU against tokens/s per user, and the front of those that meet the
// TTFT target: the points no other point beats on both axes. Disaggregated
// points pair each decode batch with the prefill engine that costs the
// fewest GPUs per request, in the balanced ratio.
func (s *search) pareto() (curve, front []ParetoPoint) {
	osl := float64(s.r.OSL)
	ttftOK := func(ms float64) bool { return s.r.SLA.TTFTms == 0 || ms <= s.r.SLA.TTFTms }
	itlOK := func(ms float64) bool { return s.r.SLA.ITLms == 0 || ms <= s.r.SLA.ITLms }
	if s.r.wants("agg") {
		for _, e := range s.byRole("agg") {
			for _, p := range e.points {
				curve = append(curve, ParetoPoint{Mode: "agg", Label: fmt.Sprintf("agg %s batch %d", e.label(), p.Concurrency),
					TokensPerSPerGPU: p.RequestsPerS * osl / e.gpus(), TokensPerSPerUser: 1e3 / p.ITLms,
					TTFTms: p.TTFTms, ITLms: p.ITLms, MeetsSLO: e.meets(s.r, p)})
			}
		}
	}
	if s.r.wants("disagg") {
		for _, dec := range s.byRole("decode") {
			for _, p := range dec.points {
				var bestPre *engine
				var bestCost, bestCap, bestTransfer float64
				for _, pre := range s.byRole("prefill") {
					same := pre.kind == dec.kind && pre.kind.dev.Whole()
					tr := transferMs(s.r.ISL, pre, dec, same)
					budget := s.ttftBudget(p.ITLms) - tr
					if budget > 1e12 {
						budget = 1e12
					}
					capacity := pre.prefillCapacity(budget, s.r.SLA.TTFTPercentile)
					if capacity <= 0 {
						continue
					}
					if c := pre.gpus() / capacity; bestPre == nil || c < bestCost {
						bestPre, bestCost, bestCap, bestTransfer = pre, c, capacity, tr
					}
				}
				if bestPre == nil {
					continue
				}
				gpuSeconds := bestCost + dec.gpus()/p.RequestsPerS
				ttft := bestPre.points[0].TTFTms + bestTransfer
				curve = append(curve, ParetoPoint{Mode: "disagg",
					Label:            fmt.Sprintf("disagg P %s (%.2f req/s) + D %s batch %d", bestPre.label(), bestCap, dec.label(), p.Concurrency),
					TokensPerSPerGPU: osl / gpuSeconds, TokensPerSPerUser: 1e3 / p.ITLms,
					TTFTms: ttft, ITLms: p.ITLms, MeetsSLO: itlOK(p.ITLms) && ttftOK(ttft)})
			}
		}
	}
	for _, c := range curve {
		if !ttftOK(c.TTFTms) {
			continue
		}
		dominated := false
		for _, o := range curve {
			if ttftOK(o.TTFTms) && o.TokensPerSPerGPU >= c.TokensPerSPerGPU && o.TokensPerSPerUser >= c.TokensPerSPerUser &&
				(o.TokensPerSPerGPU > c.TokensPerSPerGPU || o.TokensPerSPerUser > c.TokensPerSPerUser) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, c)
		}
	}
	sort.SliceStable(front, func(i, j int) bool { return front[i].TokensPerSPerUser > front[j].TokensPerSPerUser })
	return curve, front
}
