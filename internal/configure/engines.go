package configure

import (
	"fmt"
	"sort"

	"github.com/gpuplane/gpuplane/internal/capacity"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// kind is one resolved pool entry.
type kind struct {
	idx   int
	entry PoolEntry
	dev   catalog.Device
	maxTP int
	// equiv is one device in GPU equivalents (its share of the GPU's compute).
	equiv float64
	cat   *catalog.Catalog // placement rules for physical GPU counts
}

// Point is one measured operating point of an engine: Concurrency requests
// in flight on one worker.
type Point struct {
	Concurrency  int     `json:"concurrency"`
	TTFTms       float64 `json:"ttft_ms"`
	ITLms        float64 `json:"itl_ms"`
	E2Ems        float64 `json:"e2e_ms"`
	RequestsPerS float64 `json:"requests_per_s"`
}

// engine is one worker configuration in one role, with its sweep.
type engine struct {
	kind *kind
	role string // agg, prefill, decode
	// dp > 1 makes a worker dp attention-DP ranks of tp GPUs each.
	tp, pp, ep, dp int
	w              *perf.Worker
	points         []Point // ascending concurrency
	maxConc        int
	err            error // why it cannot serve (does not fit, invalid parallelism)
}

func (e *engine) devices() int       { return e.tp * e.pp * max(e.dp, 1) }
func (e *engine) gpus() float64      { return float64(e.devices()) * e.kind.equiv }
func (e *engine) cost() float64      { return float64(e.devices()) * e.kind.entry.PricePerHour }
func (e *engine) deviceName() string { return e.kind.dev.Name() }

// label names the engine for tables and explanations.
func (e *engine) label() string {
	s := fmt.Sprintf("%s tp%d", e.deviceName(), e.tp)
	if e.pp > 1 {
		s += fmt.Sprintf(" pp%d", e.pp)
	}
	if e.dp > 1 {
		s += fmt.Sprintf(" dp%d", e.dp)
	}
	if e.ep > 1 {
		s += fmt.Sprintf(" ep%d", e.ep)
	}
	return s
}

// sweepGrid is the concurrency ladder each engine is measured on; the
// search then bisects between the last point inside the SLO and the first outside.
var sweepGrid = []int{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024}

// prefillGrid is enough to see a prefill engine's isolated latency and its
// saturated rate: a few prompts fill the token budget.
var prefillGrid = []int{1, 2, 4, 8}

// resolve turns the pool into kinds and lists the engine configurations.
func resolve(env Env, r *Request) ([]*kind, []*engine, error) {
	var kinds []*kind
	for i, p := range r.Pool {
		d, err := env.Catalog.Device(p.Device, "")
		if err != nil {
			if r.DeviceField != "" && len(r.Pool) == 1 {
				return nil, nil, fmt.Errorf("%s: %w", r.DeviceField, err)
			}
			return nil, nil, fmt.Errorf("pool[%d].device: %w", i, err)
		}
		maxTP := d.GPU.MaxTP()
		if p.GPUsPerNode > 0 {
			maxTP = min(maxTP, p.GPUsPerNode)
		}
		if !d.Whole() {
			maxTP = 1
		}
		kinds = append(kinds, &kind{idx: i, entry: p, dev: d, maxTP: min(maxTP, p.Count), equiv: d.ComputeFraction, cat: env.Catalog})
	}
	base, err := baseConfig(env, r)
	if err != nil {
		return nil, nil, err
	}
	var engines []*engine
	for _, k := range kinds {
		for _, spec := range parallelisms(env, base, k, r.ISL+r.OSL) {
			for _, role := range []string{"agg", "prefill", "decode"} {
				if role == "agg" && !r.wants("agg") || role != "agg" && !r.wants("disagg") {
					continue
				}
				cfg := base
				cfg.Device, cfg.TP, cfg.PP, cfg.EP, cfg.DP = k.dev, spec[0], spec[1], spec[2], spec[3]
				e := &engine{kind: k, role: role, tp: spec[0], pp: spec[1], ep: spec[2], dp: spec[3]}
				e.w, e.err = perf.NewWorker(cfg, env.Params)
				engines = append(engines, e)
			}
		}
	}
	return kinds, engines, nil
}

// parallelisms lists {tp, pp, ep, dp} for a kind: every power-of-two TP
// the node allows; PP across nodes only where even the largest TP does not
// hold the model; for MoE models EP = TP as an alternative, and attention
// data parallelism: dp ranks of one GPU each within the node, the experts
// over all of them (the layout the engines recommend for MLA models, and
// the only one TensorRT-LLM's attention DP has).
func parallelisms(env Env, base perf.Config, k *kind, seq int) [][4]int {
	var out [][4]int
	m := base.Model
	for tp := 1; tp <= k.maxTP; tp *= 2 {
		out = append(out, [4]int{tp, 1, 1, 1})
		if m.MoE != nil && tp > 1 && m.MoE.Experts%tp == 0 {
			out = append(out, [4]int{tp, 1, tp, 1})
		}
	}
	if m.MoE != nil && k.dev.Whole() {
		for dp := 2; dp <= k.maxTP; dp *= 2 {
			if m.MoE.Experts%dp == 0 {
				out = append(out, [4]int{1, 1, dp, dp})
			}
		}
	}
	if k.dev.Whole() && k.maxTP > 1 {
		cfg := base
		cfg.Device, cfg.TP = k.dev, k.maxTP
		if w, err := perf.NewWorker(cfg, env.Params); err == nil && w.CheckFit(seq) != nil {
			for pp := 2; pp*k.maxTP <= k.entry.Count && pp <= 4; pp *= 2 {
				out = append(out, [4]int{k.maxTP, pp, 1, 1})
			}
		}
	}
	return out
}

// profile measures the engine over its concurrency ladder. Agg and decode
// engines are then refined to the exact largest concurrency inside the SLO.
func (e *engine) profile(r *Request) int {
	if e.err != nil {
		return 0
	}
	wl := serving.Workload{ISL: r.ISL, OSL: r.OSL}
	need := r.ISL + r.OSL
	if e.role == "prefill" {
		need = r.ISL + 1
	}
	if err := e.w.CheckFit(need); err != nil {
		e.err = err
		return 0
	}
	cfg := e.w.Config()
	e.maxConc = max(cfg.DP, 1) * min(cfg.MaxSeqs, e.w.Memory().KVTokens/need)
	grid := sweepGrid
	if e.role == "prefill" {
		grid = prefillGrid
		if cfg.DP > 1 {
			// One prompt alone, then every rank's share of the queue.
			grid = []int{1}
			for _, c := range prefillGrid {
				grid = append(grid, c*cfg.DP)
			}
		}
	}
	runs := 0
	add := func(c int) (Point, error) {
		runs++
		wl.Concurrency = c
		p, err := e.run(wl, r.SLA)
		if err == nil {
			e.points = append(e.points, p)
		}
		return p, err
	}
	for _, c := range grid {
		if c > e.maxConc {
			break
		}
		if _, err := add(c); err != nil {
			e.err = err
			return runs
		}
	}
	if n := len(e.points); n == 0 || e.points[n-1].Concurrency < e.maxConc && e.role != "prefill" {
		if _, err := add(e.maxConc); err != nil {
			e.err = err
			return runs
		}
	}
	if e.role == "prefill" {
		return runs
	}
	// Bisect between the last point inside the SLO and the first outside.
	lo, hi := -1, -1
	for i, p := range e.points {
		if e.meets(r, p) {
			lo = i
		} else if lo >= 0 && hi < 0 && i > lo {
			hi = i
		}
	}
	if lo >= 0 && hi == lo+1 {
		a, b := e.points[lo].Concurrency, e.points[hi].Concurrency
		for b-a > 1 {
			mid := (a + b) / 2
			p, err := add(mid)
			if err != nil {
				break
			}
			if e.meets(r, p) {
				a = mid
			} else {
				b = mid
			}
		}
		sort.Slice(e.points, func(i, j int) bool { return e.points[i].Concurrency < e.points[j].Concurrency })
	}
	return runs
}

// run measures one point; its TTFT and ITL are the statistics the SLA judges.
func (e *engine) run(wl serving.Workload, sla SLA) (Point, error) {
	var res *serving.Result
	var err error
	switch e.role {
	case "agg":
		res, err = serving.Aggregated(e.w, max(e.dp, 1), wl, serving.Options{})
	case "prefill":
		res, err = serving.PrefillOnly(e.w, wl, serving.Options{})
	default:
		res, err = serving.DecodeOnly(e.w, wl, serving.Options{})
	}
	if err != nil {
		return Point{}, err
	}
	return Point{Concurrency: wl.Concurrency, TTFTms: res.TTFTAt(sla.TTFTPercentile), ITLms: res.TPOTAt(sla.ITLPercentile),
		E2Ems: res.E2Ems, RequestsPerS: res.RequestsPerS}, nil
}

// meets is the per-engine part of the SLO: agg engines answer all of it;
// decode engines the ITL (their E2E depends on the prefill pool).
func (e *engine) meets(r *Request, p Point) bool {
	s := r.SLA
	ok := s.ITLms == 0 || p.ITLms <= s.ITLms
	if e.role == "agg" {
		ok = ok && (s.TTFTms == 0 || p.TTFTms <= s.TTFTms) && (s.E2Ems == 0 || p.E2Ems <= s.E2Ems)
	}
	return ok
}

// best is the highest-throughput point inside the engine's part of the SLO.
func (e *engine) best(r *Request) (Point, bool) {
	var best Point
	found := false
	for _, p := range e.points {
		if e.meets(r, p) && (!found || p.RequestsPerS > best.RequestsPerS) {
			best, found = p, true
		}
	}
	return best, found
}

// next is the first measured point above c, the one that shows which limit binds.
func (e *engine) next(c int) (Point, bool) {
	for _, p := range e.points {
		if p.Concurrency > c {
			return p, true
		}
	}
	return Point{}, false
}

// ranks is how many attention-DP ranks a worker of e has.
func (e *engine) ranks() float64 { return float64(max(e.dp, 1)) }

// prefillQueue is one rank of the prefill engine as a queueing server:
// its one-prompt TTFT and its service time at the saturated rate, in ms
// (ok false before it has been measured). The ranks of an attention-DP
// worker are queues of their own, each taking its share of the requests.
func (e *engine) prefillQueue() (t1, service float64, ok bool) {
	if len(e.points) == 0 {
		return 0, 0, false
	}
	maxRate := 0.0
	for _, p := range e.points {
		maxRate = max(maxRate, p.RequestsPerS)
	}
	if maxRate == 0 {
		return 0, 0, false
	}
	return e.points[0].TTFTms, 1e3 * e.ranks() / maxRate, true
}

// prefillCapacity is the request rate one prefill worker takes while the
// TTFT at percentile pct (0: the mean) stays within budget ms (M/D/1 a
// rank, see capacity.QueueRateAt); 0 if even one prompt misses the budget.
func (e *engine) prefillCapacity(budgetMs, pct float64) float64 {
	t1, s, ok := e.prefillQueue()
	if !ok {
		return 0
	}
	return e.ranks() * capacity.QueueRateAt(t1, s, budgetMs, pct)
}
