package configure

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// Env is what a search reads: the catalog and the model parameters.
type Env = estimate.Env

// Options tune a search.
type Options struct {
	// Progress, if set, is called as engine profiles finish (from several goroutines).
	Progress func(done, total int)
}

type search struct {
	env     Env
	r       *Request
	kinds   []*kind
	engines []*engine
	sims    atomic.Int64
	scored  int
	// pinned is autoscale's pair of best engines, reported first.
	pinned *deployment
}

func baseConfig(env Env, r *Request) (perf.Config, error) {
	return estimate.BaseConfig(env, estimate.Query{Model: r.Model, GPU: r.Pool[0].Device, Precision: r.Precision,
		KVPrecision: r.KVPrecision, Backend: r.Backend, SpecTokens: r.SpecTokens, SpecAccept: r.SpecAccept})
}

// Search finds the best deployment for the request.
func Search(env Env, req Request, opt Options) (*Result, error) {
	r := req
	if r.Pick == "" {
		r.Pick = Throughput
	}
	if r.Backend == "" {
		r.Backend = "vllm"
	}
	checkpoint := r.Model
	if base, p, ok := env.Catalog.QuantizedCheckpoint(r.Model); ok {
		if given, err := catalog.ParsePrecision(r.Precision); r.Precision != "" && (err != nil || given != p) {
			return nil, fmt.Errorf("precision: %s contradicts the %s checkpoint %s; drop --precision", r.Precision, p, r.Model)
		}
		r.Model, r.Precision = base, string(p)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	asked := r.SLA
	if r.Confidence > 0 {
		s, err := atConfidence(env, &r)
		if err != nil {
			return nil, err
		}
		r.SLA = s
	}
	kinds, engines, err := resolve(env, &r)
	if err != nil {
		return nil, err
	}
	s := &search{env: env, r: &r, kinds: kinds, engines: engines}
	s.profile(opt.Progress)
	if err := s.anyServes(); err != nil {
		return nil, err
	}

	var deps []*deployment
	switch r.Pick {
	case LoadMatch:
		deps = s.loadMatch()
	default:
		deps = s.throughput()
	}
	if r.Pick == Autoscale {
		s.autoscale()
	}
	res := s.result(deps)
	res.Checkpoint = checkpoint
	if r.Confidence > 0 {
		// The result states the SLA asked for, and what the predictions met.
		judged := r.SLA
		res.SLA, res.Confidence, res.SLAAtConfidence = asked, r.Confidence, &judged
	}
	s.explain(res)
	return res, nil
}

// profile measures every engine on all cores.
func (s *search) profile(progress func(done, total int)) {
	var wg sync.WaitGroup
	var done atomic.Int64
	var runs atomic.Int64
	work := make(chan *engine)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for e := range work {
				runs.Add(int64(e.profile(s.r)))
				if progress != nil {
					progress(int(done.Add(1)), len(s.engines))
				}
			}
		})
	}
	for _, e := range s.engines {
		work <- e
	}
	close(work)
	wg.Wait()
	s.sims.Add(runs.Load())
}

// anyServes fails the search when no engine of the pool can hold the
// model, naming the first reason.
func (s *search) anyServes() error {
	var first error
	for _, e := range s.engines {
		if e.err == nil && len(e.points) > 0 {
			return nil
		}
		if first == nil && e.err != nil {
			first = fmt.Errorf("%s %s: %w", e.role, e.label(), e.err)
		}
	}
	if first == nil {
		return fmt.Errorf("pool: no engine configuration to search")
	}
	return fmt.Errorf("no device in the pool can serve the model: %w", first)
}

func (s *search) byRole(role string) []*engine {
	var out []*engine
	for _, e := range s.engines {
		if e.role == role && e.err == nil && len(e.points) > 0 {
			out = append(out, e)
		}
	}
	return out
}

// ttftBudget is what the SLO leaves the prefill pool (queue, compute and
// KV hand-off) given the decode pool's ITL.
func (s *search) ttftBudget(itl float64) float64 {
	b := math.Inf(1)
	if s.r.SLA.TTFTms > 0 {
		b = s.r.SLA.TTFTms
	}
	if s.r.SLA.E2Ems > 0 {
		b = min(b, s.r.SLA.E2Ems-float64(s.r.OSL-1)*itl)
	}
	return b
}

// pair builds a disaggregated candidate's engines and per-worker rates, or
// nil when the pair cannot meet the SLO at any load.
func (s *search) pair(p, d *engine) *deployment {
	dp, ok := d.best(s.r) // the highest-rate point inside the ITL
	if !ok {
		return nil
	}
	dep := &deployment{mode: "disagg", pre: p, dec: d, decPt: dp}
	// Hand-off assuming one domain when the kinds allow it; re-checked per worker count.
	same := p.kind == d.kind && p.kind.dev.Whole() && p.devices()+d.devices() <= p.kind.dev.GPU.MaxTP()
	dep.transfer = transferMs(s.r.ISL, p, d, same)
	budget := s.ttftBudget(dp.ITLms) - dep.transfer
	if math.IsInf(budget, 1) {
		budget = 1e12
	}
	dep.preCap = p.prefillCapacity(budget, s.r.SLA.TTFTPercentile)
	if dep.preCap <= 0 {
		return nil
	}
	return dep
}

// throughput sizes every engine combination to the most goodput the pool
// and budget allow.
func (s *search) throughput() []*deployment {
	var out []*deployment
	if s.r.wants("agg") {
		for _, e := range s.byRole("agg") {
			pt, ok := e.best(s.r)
			if !ok {
				continue
			}
			d := &deployment{mode: "agg", agg: e, aggPt: pt}
			for w := 1; ; w++ {
				d.w = w
				s.scored++
				if ok, why := s.fits(d); !ok {
					d.w, d.bound = w-1, why
					break
				}
			}
			if d.w > 0 {
				d.rate, d.users = float64(d.w)*pt.RequestsPerS, d.w*pt.Concurrency
				if d.w > unitCap {
					d.copies = d.w // identical workers: one is the unit
				}
				out = append(out, d)
			}
		}
	}
	if s.r.wants("disagg") {
		for _, p := range s.byRole("prefill") {
			for _, dec := range s.byRole("decode") {
				if d := s.sizeDisagg(p, dec); d != nil {
					out = append(out, d)
				}
			}
		}
	}
	s.settle(out)
	return out
}

// sizeDisagg gives a prefill/decode engine pair the worker counts that
// carry the most requests the pool and budget allow, rate-matched.
func (s *search) sizeDisagg(p, dec *engine) *deployment {
	base := s.pair(p, dec)
	if base == nil {
		return nil
	}
	var best *deployment
	capped := false
	for np := 1; ; np++ {
		if np > unitCap {
			capped = true
			break
		}
		d := *base
		d.np, d.nd = np, 1
		if ok, _ := s.fits(&d); !ok {
			break
		}
		// Decode workers to match np prefill workers, as many as fit.
		want := int(math.Ceil(float64(np) * d.preCap / d.decPt.RequestsPerS))
		for nd := 1; nd <= max(want, 1); nd++ {
			d.nd = nd
			s.scored++
			if ok, why := s.fits(&d); !ok {
				d.nd, d.bound = nd-1, why
				break
			}
		}
		if d.nd == 0 {
			break
		}
		d.rate = math.Min(float64(d.np)*d.preCap, float64(d.nd)*d.decPt.RequestsPerS)
		if best == nil || d.rate > best.rate+1e-9 || math.Abs(d.rate-best.rate) <= 1e-9 && d.gpus() < best.gpus() {
			c := d
			best = &c
		}
	}
	if best == nil {
		return nil
	}
	if capped {
		best = s.replicate(base)
	}
	if best.bound == "" {
		// The last np that fitted stopped because the next did not.
		n := *best
		n.np++
		_, best.bound = s.fits(&n)
	}
	best.transfer = transferMs(s.r.ISL, p, dec, best.sameDomain())
	best.users = max(1, int(math.Round(best.rate*best.analyticE2E(s.r.OSL)/1e3)))
	return best
}

// replicate sizes a pair for a pool larger than a unit: among units of up
// to unitCap prefill workers with rate-matched decode workers, the one whose
// copies, as many as the pool and budget hold, carry the most requests.
func (s *search) replicate(base *deployment) *deployment {
	var best *deployment
	bestTotal := 0.0
	for np := 1; np <= unitCap; np++ {
		d := *base
		d.np = np
		d.nd = min(unitCap, max(1, int(math.Ceil(float64(np)*d.preCap/d.decPt.RequestsPerS))))
		d.rate = math.Min(float64(d.np)*d.preCap, float64(d.nd)*d.decPt.RequestsPerS)
		k, why := s.copiesFitting(&d)
		s.scored++
		if k == 0 {
			break
		}
		total := float64(k) * d.rate
		if best == nil || total > bestTotal+1e-9 || math.Abs(total-bestTotal) <= 1e-9 && float64(k)*d.gpus() < best.gpus() {
			c := d
			c.np, c.nd, c.copies, c.rate, c.bound = k*np, k*d.nd, k, total, why
			best, bestTotal = &c, total
		}
	}
	if best == nil {
		return base
	}
	best.bound = fmt.Sprintf("%d copies of a %d+%d unit; %s", best.copies, best.np/best.copies, best.nd/best.copies, best.bound)
	return best
}

// copiesFitting is how many copies of unit d the pool and budget hold,
// and the limit the next copy breaks.
func (s *search) copiesFitting(d *deployment) (int, string) {
	k := 0
	lo, hi := 0, 1
	probe := func(n int) (bool, string) {
		c := *d
		c.np, c.nd, c.w = d.np*n, d.nd*n, d.w*n
		return s.fits(&c)
	}
	for {
		ok, _ := probe(hi)
		if !ok {
			break
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 { // fits is monotone in the copies
		mid := (lo + hi) / 2
		if ok, _ := probe(mid); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	k = lo
	_, why := probe(k + 1)
	return k, why
}

// loadMatch sizes every engine combination to the load with the fewest GPUs.
func (s *search) loadMatch() []*deployment {
	var out []*deployment
	rate, users := s.r.RequestRate, s.r.Concurrency
	if s.r.wants("agg") {
		for _, e := range s.byRole("agg") {
			pt, ok := e.best(s.r)
			if !ok {
				continue
			}
			d := &deployment{mode: "agg", agg: e, aggPt: pt, bound: "load"}
			if users > 0 {
				d.w = ceilDiv(users, pt.Concurrency)
				d.users = users
			} else {
				d.w = int(math.Ceil(rate / pt.RequestsPerS))
				d.users = max(1, int(math.Ceil(rate*pt.E2Ems/1e3)))
			}
			s.scored++
			d.rate = rate
			if d.w > unitCap {
				d.copies = d.w
			}
			out = append(out, d)
		}
	}
	if s.r.wants("disagg") {
		for _, p := range s.byRole("prefill") {
			for _, dec := range s.byRole("decode") {
				d := s.pair(p, dec)
				if d == nil {
					continue
				}
				s.scored++
				s.sizeForLoad(d)
				out = append(out, d)
			}
		}
	}
	s.settle(out)
	return out
}

// sizeForLoad gives a prefill/decode pair the worker counts that carry the
// requested load: the users' request rate (Little's law over the pair's
// latency) or the request rate itself.
func (s *search) sizeForLoad(d *deployment) {
	d.bound = "load"
	if users := s.r.Concurrency; users > 0 {
		d.users = users
		d.nd = ceilDiv(users, d.decPt.Concurrency)
		d.np = 1
		d.rate = float64(users) / (d.prefillTTFT(0) + float64(s.r.OSL-1)*d.decPt.ITLms) * 1e3
		d.np = int(math.Ceil(d.rate / d.preCap))
		replicateForLoad(d)
		d.transfer = transferMs(s.r.ISL, d.pre, d.dec, d.sameDomain())
		return
	}
	d.rate = s.r.RequestRate
	d.np = int(math.Ceil(d.rate / d.preCap))
	d.nd = int(math.Ceil(d.rate / d.decPt.RequestsPerS))
	replicateForLoad(d)
	d.transfer = transferMs(s.r.ISL, d.pre, d.dec, d.sameDomain())
	d.users = max(1, int(math.Ceil(d.rate*d.analyticE2E(s.r.OSL)/1e3)))
}

// settle verifies the most promising candidates as whole deployments and
// moves each to the operating point that really meets the SLO. Candidates
// are independent, so they are verified on all cores.
func (s *search) settle(deps []*deployment) {
	s.sortAnalytic(deps)
	n := min(len(deps), max(s.r.top()+4, 12))
	var wg sync.WaitGroup
	work := make(chan *deployment)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for d := range work {
				if s.r.Pick == LoadMatch {
					s.settleLoad(d)
				} else {
					s.settleMax(d)
				}
			}
		})
	}
	for _, d := range deps[:n] {
		work <- d
	}
	close(work)
	wg.Wait()
}

// settleMax finds the most users the deployment holds inside the SLO, to
// within 2%: the analytic guess is usually close, so it steps down from it
// before bisecting.
func (s *search) settleMax(d *deployment) {
	ok := func(users int) (*serving.Result, bool) {
		r, err := s.verify(d, users)
		if err != nil {
			return nil, false
		}
		in, _ := s.within(r)
		return r, in
	}
	hi := d.users
	res, in := ok(hi)
	if res == nil {
		return
	}
	if in {
		d.res, d.meets = res, true
		return
	}
	lo := 0
	var best *serving.Result
	for step := 0.85; hi > 1; step *= 0.85 {
		u := max(1, int(float64(d.users)*step))
		r, in := ok(u)
		if r == nil {
			return
		}
		if in {
			lo, best = u, r
			break
		}
		hi = u
		if u == 1 {
			break
		}
	}
	for lo > 0 && hi-lo > max(1, hi/50) {
		mid := (lo + hi) / 2
		r, in := ok(mid)
		if r == nil {
			break
		}
		if in {
			lo, best = mid, r
		} else {
			hi = mid
		}
	}
	if lo > 0 {
		d.res, d.users, d.meets = best, lo, true
		return
	}
	d.res, d.users = res, 1
	if r, _ := ok(1); r != nil {
		d.res = r
	}
}

// settleLoad checks the deployment at the target load and adds a worker to
// the pool whose latency misses, a few times, while the pool allows.
func (s *search) settleLoad(d *deployment) {
	for try := 0; try < 4; try++ {
		users := d.users
		if s.r.Concurrency == 0 {
			// Users that produce the target rate: Little's law on the run's own latency.
			r, err := s.verify(d, users)
			if err != nil {
				return
			}
			users = max(1, int(math.Ceil(s.r.RequestRate*r.E2Ems/1e3)))
		}
		res, err := s.verify(d, users)
		if err != nil {
			return
		}
		d.res, d.users = res, users
		ok, miss := s.within(res)
		if fit, why := s.fits(d); !fit {
			d.bound, d.meets = "the load needs more than "+strings.TrimPrefix(why, "the "), false
			return
		}
		if ok {
			d.meets = true
			return
		}
		k := max(d.copies, 1) // one more worker in every unit
		switch {
		case d.mode == "agg":
			d.w += k
		case miss == "ttft":
			d.np += k
		default:
			d.nd += k
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / max(b, 1) }

// replicateForLoad turns a disaggregated deployment larger than a unit
// into copies of one, rounding each pool up to a multiple of the copies
// (at most copies-1 workers more than the load needs).
func replicateForLoad(d *deployment) {
	if d.np <= unitCap && d.nd <= unitCap {
		return
	}
	k := ceilDiv(max(d.np, d.nd), unitCap)
	d.np, d.nd, d.copies = k*ceilDiv(d.np, k), k*ceilDiv(d.nd, k), k
}

// efficiency is the ranking key: goodput per GPU, or per unit of price.
func (s *search) efficiency(tokens, gpus, cost float64) float64 {
	if s.r.priced() {
		return tokens / cost
	}
	return tokens / gpus
}

func (s *search) sortAnalytic(deps []*deployment) {
	key := func(d *deployment) float64 {
		if s.r.Pick == LoadMatch {
			if s.r.priced() {
				return -d.cost()
			}
			return -d.gpus()
		}
		return s.efficiency(d.rate*float64(s.r.OSL), d.gpus(), d.cost())
	}
	sort.SliceStable(deps, func(i, j int) bool { return key(deps[i]) > key(deps[j]) })
}
