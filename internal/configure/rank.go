package configure

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuplane/gpuplane/internal/capacity"
	"github.com/gpuplane/gpuplane/internal/slo"
)

// result ranks the verified candidates and assembles the answer.
func (s *search) result(deps []*deployment) *Result {
	res := &Result{ISL: s.r.ISL, OSL: s.r.OSL, SLA: s.r.SLA, Pick: s.r.Pick, Load: s.r.RequestRate, Users: s.r.Concurrency,
		SpecTokens: s.r.SpecTokens, SpecAccept: s.r.SpecAccept,
		Judged: "ttft " + slo.Stat(s.r.SLA.TTFTPercentile) + ", itl " + slo.Stat(s.r.SLA.ITLPercentile)}
	res.Model, res.Backend, res.Precision = s.resolved()
	if m, err := s.env.Catalog.Model(res.Model); err == nil {
		if n := m.ContextNote(s.r.ISL + s.r.OSL); n != "" {
			res.Notes = append(res.Notes, n)
		}
	}
	for _, e := range s.engines {
		if e.err != nil {
			res.Rejected = append(res.Rejected, Rejected{Engine: e.label(), Role: e.role, Reason: e.err.Error()})
		}
	}
	var cfgs []Config
	for _, d := range deps {
		if d.res != nil {
			cfgs = append(cfgs, s.config(d))
		}
	}
	s.rank(cfgs)
	if d := s.pinned; d != nil {
		pc := s.config(d)
		kept := cfgs[:0]
		for _, c := range cfgs {
			if Describe(c) != Describe(pc) {
				kept = append(kept, c)
			}
		}
		cfgs = append([]Config{pc}, kept...)
		res.Engines = &Engines{Prefill: pc.Prefill, Decode: pc.Decode}
	}
	anyMeets := false
	for _, c := range cfgs {
		anyMeets = anyMeets || c.MeetsSLO
	}
	if !anyMeets {
		res.Unreachable = s.miss()
		cfgs = append(s.closest(), cfgs...)
		sort.SliceStable(cfgs, func(i, j int) bool { return s.violation(cfgs[i]) < s.violation(cfgs[j]) })
	}
	for i := range cfgs {
		cfgs[i].Rank = i + 1
	}
	if len(cfgs) > 0 {
		best := cfgs[0]
		res.Best = &best
	}
	res.Candidates = cfgs[:min(len(cfgs), s.r.top())]
	res.CandidatesEvaluated = s.scored
	res.Simulations = int(s.sims.Load())
	res.Curve, res.Pareto = s.pareto()
	return res
}

// rank orders candidates inside the SLO first, then by the pick's key.
func (s *search) rank(cfgs []Config) {
	less := func(a, b Config) bool {
		if a.MeetsSLO != b.MeetsSLO {
			return a.MeetsSLO
		}
		ea, eb := s.efficiency(a.TokensPerS, a.GPUs, a.CostPerHour), s.efficiency(b.TokensPerS, b.GPUs, b.CostPerHour)
		if s.r.Pick == LoadMatch {
			ca, cb := a.GPUs, b.GPUs
			if s.r.priced() {
				ca, cb = a.CostPerHour, b.CostPerHour
			}
			if math.Abs(ca-cb) > 1e-9 {
				return ca < cb
			}
			return ea > eb
		}
		if math.Abs(ea-eb) > 1e-9*math.Max(ea, eb) {
			return ea > eb
		}
		return a.TokensPerS > b.TokensPerS
	}
	sort.SliceStable(cfgs, func(i, j int) bool { return less(cfgs[i], cfgs[j]) })
}

// config turns a verified deployment into its reported form.
func (s *search) config(d *deployment) Config {
	r := d.res
	c := Config{Mode: d.mode, GPUs: d.gpus(), GPUEquivalents: d.equivalents(), Devices: d.devices(), CostPerHour: d.cost(), Concurrency: d.users,
		RequestsPerS: r.RequestsPerS, TTFTms: r.TTFTAt(s.r.SLA.TTFTPercentile), ITLms: r.TPOTAt(s.r.SLA.ITLPercentile), E2Ems: r.E2Ems,
		TTFTMeanms: r.TTFTms, TTFTP90ms: r.TTFTP90ms, TTFTP99ms: r.TTFTP99ms, ITLMeanms: r.TPOTms, ITLP90ms: r.TPOTP90ms, ITLP99ms: r.TPOTP99ms,
		TokensPerS:        r.OutputTokensPerS,
		TokensPerSPerUser: r.OutputTokensPerSPerUser, KVTransferMs: r.KVTransferMs, MeetsSLO: d.meets}
	if d.copies > 1 {
		c.Concurrency, c.Copies = r.Concurrency, d.copies // the unit's users times the copies
	}
	if c.GPUs > 0 {
		c.TokensPerSPerGPU = c.TokensPerS / c.GPUs
	}
	if c.CostPerHour > 0 {
		c.TokensPerDollar = c.TokensPerS * 3600 / c.CostPerHour
	}
	if d.mode == "agg" {
		c.Agg = s.pool(d.agg, d.w, ceilDiv(d.users, d.w), d.aggPt.RequestsPerS, s.limit(d.agg, d.aggPt))
		c.Binding = fmt.Sprintf("per worker: %s; workers: %s", c.Agg.Limit, boundText(d.bound))
		c.DecodeStep = s.decodeStep(d.agg, d.w, r)
		return c
	}
	c.DecodeStep = s.decodeStep(d.dec, d.nd, r)
	c.Prefill = s.pool(d.pre, d.np, d.pre.promptBatch(s.r.ISL), d.preCap, s.prefillLimit(d))
	// The decode batch is the largest the worker holds inside the ITL (what
	// its engine is capped at), never below the requests it holds on
	// average at this load (its share of the rate over the decode time).
	mean := r.MeanDecoding(s.r.OSL, d.nd)
	c.Decode = s.pool(d.dec, d.nd, max(mean, d.decPt.Concurrency), d.decPt.RequestsPerS, s.limit(d.dec, d.decPt))
	side := "decode pool"
	if float64(d.np)*d.preCap < float64(d.nd)*d.decPt.RequestsPerS {
		side = "prefill pool"
	}
	c.Binding = fmt.Sprintf("%s saturates first; prefill: %s; decode: %s; workers: %s", side, c.Prefill.Limit, c.Decode.Limit, boundText(d.bound))
	return c
}

// boundText says what capped the worker counts.
func boundText(b string) string {
	switch {
	case b == "load":
		return "sized to the load"
	case strings.HasPrefix(b, "the "):
		return "capped by " + b
	case b == "":
		return "not capped"
	}
	return b
}

func (s *search) pool(e *engine, workers, batch int, capacity float64, limit string) *Pool {
	p := &Pool{Role: e.role, Device: e.deviceName(), TP: e.tp, Workers: workers, GPUsPerWorker: e.devices(),
		Batch: batch, CapacityRPS: capacity, Limit: limit}
	if e.pp > 1 {
		p.PP = e.pp
	}
	if e.ep > 1 {
		p.EP = e.ep
	}
	if e.dp > 1 {
		p.DP = e.dp
	}
	return p
}

// promptBatch is how many prompts one prefill iteration of a worker (all
// its ranks) holds.
func (e *engine) promptBatch(isl int) int {
	return max(1, min(e.maxConc, max(e.dp, 1)*(e.w.Config().MaxBatchedTokens/isl)))
}

// limit says what stops an engine from taking one more request at pt.
func (s *search) limit(e *engine, pt Point) string {
	if nx, ok := e.next(pt.Concurrency); ok {
		var over []string
		sl := s.r.SLA
		if sl.ITLms > 0 && nx.ITLms > sl.ITLms {
			over = append(over, fmt.Sprintf("ITL %.1f ms > %.4g", nx.ITLms, sl.ITLms))
		}
		if e.role == "agg" && sl.TTFTms > 0 && nx.TTFTms > sl.TTFTms {
			over = append(over, fmt.Sprintf("TTFT %.0f ms > %.4g", nx.TTFTms, sl.TTFTms))
		}
		if e.role == "agg" && sl.E2Ems > 0 && nx.E2Ems > sl.E2Ems {
			over = append(over, fmt.Sprintf("E2E %.0f ms > %.4g", nx.E2Ems, sl.E2Ems))
		}
		if len(over) > 0 {
			return fmt.Sprintf("batch %d (%d would miss: %s)", pt.Concurrency, nx.Concurrency, strings.Join(over, ", "))
		}
		return fmt.Sprintf("throughput peaks at batch %d", pt.Concurrency)
	}
	cfg := e.w.Config()
	if e.maxConc >= cfg.MaxSeqs {
		return fmt.Sprintf("max-seqs %d", cfg.MaxSeqs)
	}
	return fmt.Sprintf("KV memory: %d requests of %d tokens fill the cache", e.maxConc, s.r.ISL+s.r.OSL)
}

func (s *search) prefillLimit(d *deployment) string {
	budget := s.ttftBudget(d.decPt.ITLms)
	if math.IsInf(budget, 1) {
		return fmt.Sprintf("utilisation %.0f%% (no TTFT target)", capacity.MaxUtilisation*100)
	}
	return fmt.Sprintf("TTFT %.0f ms: %.0f ms prefill + queueing + %.1f ms KV hand-off", budget, d.pre.points[0].TTFTms, d.transfer)
}

// violation is how far a candidate is from the SLO: its worst ratio of
// latency to target (<= 1 inside).
func (s *search) violation(c Config) float64 {
	v := 0.0
	if s.r.SLA.TTFTms > 0 {
		v = max(v, c.TTFTms/s.r.SLA.TTFTms)
	}
	if s.r.SLA.ITLms > 0 {
		v = max(v, c.ITLms/s.r.SLA.ITLms)
	}
	if s.r.SLA.E2Ems > 0 {
		v = max(v, c.E2Ems/s.r.SLA.E2Ems)
	}
	return v
}

// miss reports the best latencies any engine reaches with one user.
func (s *search) miss() *Miss {
	m := &Miss{BestTTFTms: math.Inf(1), BestITLms: math.Inf(1), BestE2Ems: math.Inf(1)}
	// A disaggregated deployment's best end to end is the fastest prompt then the fastest decode.
	preBest, decBest := math.Inf(1), math.Inf(1)
	for _, e := range s.engines {
		if e.err != nil || len(e.points) == 0 {
			continue
		}
		p := e.points[0]
		switch e.role {
		case "agg":
			m.BestTTFTms, m.BestITLms, m.BestE2Ems = min(m.BestTTFTms, p.TTFTms), min(m.BestITLms, p.ITLms), min(m.BestE2Ems, p.E2Ems)
		case "prefill":
			preBest = min(preBest, p.TTFTms)
		case "decode":
			decBest = min(decBest, p.ITLms)
		}
	}
	m.BestTTFTms, m.BestITLms = min(m.BestTTFTms, preBest), min(m.BestITLms, decBest)
	m.BestE2Ems = min(m.BestE2Ems, preBest+float64(s.r.OSL-1)*decBest)
	var parts []string
	add := func(name string, best, target float64) {
		if math.IsInf(best, 1) {
			return // no engine measured it: said below, never as +Inf
		}
		if target > 0 && best > target {
			parts = append(parts, fmt.Sprintf("best %s is %.1f ms against %g ms (%.0f%% over)", name, best, target, (best/target-1)*100))
		}
	}
	add("TTFT", m.BestTTFTms, s.r.SLA.TTFTms)
	add("ITL", m.BestITLms, s.r.SLA.ITLms)
	add("E2E", m.BestE2Ems, s.r.SLA.E2Ems)
	switch {
	case math.IsInf(m.BestTTFTms, 1) && math.IsInf(m.BestITLms, 1):
		m.Message = "no engine on this pool serves even one request; see rejected for why"
	case len(parts) == 0:
		budget, fix := "", "relax the SLO or add devices"
		if s.r.MaxGPUs > 0 || s.r.MaxCostPerHour > 0 {
			budget = fmt.Sprintf(" (maxGpus %g, maxCostPerHour %g; 0: none)", s.r.MaxGPUs, s.r.MaxCostPerHour)
			fix = "relax the SLO, add devices or raise the budget"
		}
		m.Message = "no deployment the pool and budget" + budget + " allow meets the SLO together, though each target alone is reachable; " + fix
	default:
		m.Message = "SLO unreachable on this pool: " + strings.Join(parts, "; ") + "; relax the SLO or use faster devices or more tensor parallelism"
	}
	for _, f := range []*float64{&m.BestTTFTms, &m.BestITLms, &m.BestE2Ems} {
		if math.IsInf(*f, 1) {
			*f = 0
		}
	}
	return m
}

// closest builds one-worker deployments with a single user, the fastest
// each engine combination can be, so an unreachable SLO still gets a table.
func (s *search) closest() []Config {
	var out []Config
	add := func(d *deployment) {
		if ok, _ := s.fits(d); !ok {
			return
		}
		res, err := s.verify(d, 1)
		if err != nil {
			return
		}
		d.res, d.users, d.bound = res, 1, "SLO: even one user misses it"
		out = append(out, s.config(d))
	}
	for _, e := range s.byRole("agg") {
		s.scored++
		add(&deployment{mode: "agg", agg: e, aggPt: e.points[0], w: 1})
	}
	for _, p := range s.byRole("prefill") {
		for _, dec := range s.byRole("decode") {
			s.scored++
			d := &deployment{mode: "disagg", pre: p, dec: dec, decPt: dec.points[0], np: 1, nd: 1}
			d.transfer = transferMs(s.r.ISL, p, dec, d.sameDomain())
			add(d)
		}
	}
	return out
}

// resolved names the model, backend and "weights/kv" precision as the
// engines normalised them (the request's words if no engine was built).
func (s *search) resolved() (model, backend, precision string) {
	for _, e := range s.engines {
		if e.w != nil {
			c := e.w.Config()
			return c.Model.Name, string(c.Backend), string(c.Weights) + "/" + string(c.KV)
		}
	}
	return s.r.Model, s.r.Backend, s.r.Precision
}
