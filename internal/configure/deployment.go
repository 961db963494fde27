package configure

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/capacity"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// deployment is a candidate: an aggregated pool, or a prefill and a decode
// pool, with worker counts and the operating point the search chose.
type deployment struct {
	mode     string
	agg      *engine
	aggPt    Point
	pre, dec *engine
	decPt    Point
	preCap   float64 // requests/s one prefill worker takes within the TTFT budget
	transfer float64 // ms of KV hand-off
	w        int     // agg workers
	np, nd   int     // prefill and decode workers
	users    int     // concurrent users at the operating point
	rate     float64 // analytic requests/s
	bound    string  // what capped the worker counts
	res      *serving.Result
	meets    bool
	// copies > 1 makes the deployment that many identical units behind
	// one router: w, np and nd are totals divisible by it, and the unit
	// alone is simulated, so a search's cost does not grow with the pool.
	copies int
}

// unitCap is the most workers of one role a simulated unit has; larger
// deployments are replicas of a unit. Pools up to this size are searched
// and simulated whole.
const unitCap = 32

// unit is one replica of a replicated deployment (d itself when whole).
func (d *deployment) unit() *deployment {
	k := max(d.copies, 1)
	if k == 1 {
		return d
	}
	u := *d
	u.w, u.np, u.nd, u.copies = d.w/k, d.np/k, d.nd/k, 1
	return &u
}

// scaleResult is k units' result: the same latencies, k times the load.
func scaleResult(r *serving.Result, k int) *serving.Result {
	if k <= 1 {
		return r
	}
	s := *r
	f := float64(k)
	s.RequestsPerS *= f
	s.OutputTokensPerS *= f
	s.GPUs *= k
	s.Concurrency *= k
	s.MaxConcurrency *= k
	return &s
}

func (d *deployment) usage() map[int]int {
	u := map[int]int{}
	if d.mode == "agg" {
		u[d.agg.kind.idx] += d.w * d.agg.devices()
		return u
	}
	u[d.pre.kind.idx] += d.np * d.pre.devices()
	u[d.dec.kind.idx] += d.nd * d.dec.devices()
	return u
}

// equivalents is the deployment's share of GPU compute (a 1/2 vGPU is 0.5).
func (d *deployment) equivalents() float64 {
	if d.mode == "agg" {
		return float64(d.w) * d.agg.gpus()
	}
	return float64(d.np)*d.pre.gpus() + float64(d.nd)*d.dec.gpus()
}

// gpus is the physical GPUs the deployment occupies: its slices packed
// under the placement rules, prefill and decode slices of one GPU model
// sharing GPUs (catalog.PhysicalGPUs).
func (d *deployment) gpus() float64 {
	if d.mode == "agg" {
		return float64(d.agg.kind.cat.PhysicalGPUs([]catalog.DeviceCount{{Device: d.agg.kind.dev, N: d.w * d.agg.devices()}}))
	}
	return float64(d.pre.kind.cat.PhysicalGPUs([]catalog.DeviceCount{{Device: d.pre.kind.dev, N: d.np * d.pre.devices()},
		{Device: d.dec.kind.dev, N: d.nd * d.dec.devices()}}))
}

func (d *deployment) devices() int {
	n := 0
	for _, v := range d.usage() {
		n += v
	}
	return n
}

// cost is the devices' price scaled to the GPUs they occupy: capacity a
// deployment strands on its GPUs (an odd half A10, a MIG slot no other
// profile can take) is paid for too.
func (d *deployment) cost() float64 {
	var c float64
	if d.mode == "agg" {
		c = float64(d.w) * d.agg.cost()
	} else {
		c = float64(d.np)*d.pre.cost() + float64(d.nd)*d.dec.cost()
	}
	if occ := d.occupancy(); occ > 0 {
		c *= math.Max(d.gpus()/occ, 1)
	}
	return c
}

// occupancy is the GPUs the devices would take if packed without gaps.
func (d *deployment) occupancy() float64 {
	occ := func(e *engine, n int) float64 { return float64(n*e.devices()) * e.kind.cat.Occupancy(e.kind.dev) }
	if d.mode == "agg" {
		return occ(d.agg, d.w)
	}
	return occ(d.pre, d.np) + occ(d.dec, d.nd)
}

// fits reports whether the pool and the budget hold the deployment, and if
// not, which limit it breaks.
func (s *search) fits(d *deployment) (bool, string) {
	for idx, n := range d.usage() {
		if n > s.kinds[idx].entry.Count {
			return false, fmt.Sprintf("the pool's %d %s", s.kinds[idx].entry.Count, s.kinds[idx].dev.Name())
		}
	}
	if s.r.MaxGPUs > 0 && d.gpus() > s.r.MaxGPUs+1e-9 {
		return false, fmt.Sprintf("the GPU budget of %g", s.r.MaxGPUs)
	}
	if s.r.MaxCostPerHour > 0 && d.cost() > s.r.MaxCostPerHour+1e-9 {
		return false, fmt.Sprintf("the cost budget of %g/h", s.r.MaxCostPerHour)
	}
	return true, ""
}

// sameDomain places prefill and decode in one NVLink domain when they are
// whole GPUs of one kind that fit in it together.
func (d *deployment) sameDomain() bool {
	if d.copies > 1 {
		return d.unit().sameDomain()
	}
	if d.mode != "disagg" || d.pre.kind != d.dec.kind || !d.pre.kind.dev.Whole() {
		return false
	}
	return d.np*d.pre.devices()+d.nd*d.dec.devices() <= d.pre.kind.dev.GPU.MaxTP()
}

func transferMs(isl int, pre, dec *engine, same bool) float64 {
	return perf.KVTransferTime(isl, pre.w, dec.w, same) * 1e3
}

// prefillTTFT is the analytic mean TTFT of np prefill workers at rate.
func (d *deployment) prefillTTFT(rate float64) float64 {
	t1, s, ok := d.pre.prefillQueue()
	if !ok {
		return math.Inf(1)
	}
	return capacity.QueueTTFT(t1, s, rate/float64(d.np)/d.pre.ranks()) + d.transfer
}

// analyticE2E is the request latency the composition predicts.
func (d *deployment) analyticE2E(osl int) float64 {
	if d.mode == "agg" {
		return d.aggPt.E2Ems
	}
	return d.prefillTTFT(d.rate) + float64(osl-1)*d.decPt.ITLms
}

// verify runs the whole deployment at users concurrent users.
// A replicated deployment runs one unit with its share of the users, and
// its result counts k units (users rounded up to a multiple of k).
func (s *search) verify(d *deployment, users int) (*serving.Result, error) {
	if k := max(d.copies, 1); k > 1 {
		r, err := s.verify(d.unit(), ceilDiv(max(users, 1), k))
		if err != nil {
			return nil, err
		}
		return scaleResult(r, k), nil
	}
	s.sims.Add(1)
	wl := serving.Workload{ISL: s.r.ISL, OSL: s.r.OSL, Concurrency: max(users, 1)}
	// serving counts engines: an attention-DP worker is dp of them.
	if d.mode == "agg" {
		return serving.Aggregated(d.agg.w, d.w*max(d.agg.dp, 1), wl, serving.Options{})
	}
	return serving.Disaggregated(serving.Disagg{Prefill: d.pre.w, Decode: d.dec.w, PrefillWorkers: d.np * max(d.pre.dp, 1),
		DecodeWorkers: d.nd * max(d.dec.dp, 1), SameDomain: d.sameDomain()}, wl, serving.Options{})
}

// within reports whether a whole-deployment result meets the SLO, and if
// not, which target it misses first.
func (s *search) within(res *serving.Result) (bool, string) {
	sl := s.r.SLA
	switch {
	case sl.TTFTms > 0 && res.TTFTAt(sl.TTFTPercentile) > sl.TTFTms:
		return false, "ttft"
	case sl.ITLms > 0 && res.TPOTAt(sl.ITLPercentile) > sl.ITLms:
		return false, "itl"
	case sl.E2Ems > 0 && res.E2Ems > sl.E2Ems:
		return false, "e2e"
	}
	return true, ""
}
