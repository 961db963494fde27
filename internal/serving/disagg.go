package serving

import (
	"fmt"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Disagg describes a disaggregated deployment.
type Disagg struct {
	Prefill, Decode               *perf.Worker
	PrefillWorkers, DecodeWorkers int
	// SameDomain places prefill and decode in one node or NVLink domain.
	SameDomain bool
}

// handoff tracks requests between the prefill and the decode pool, by ID.
type handoff map[int64]*handedOff

// handedOff is one request past its prefill: when the user sent it, when
// its first token reaches the user (the hand-off landing, or a decode
// engine taking it later) and how long it waited for that engine.
type handedOff struct{ arrival, first, wait float64 }

// prefillSink forwards finished prefills to the decode pool after the KV transfer.
type prefillSink struct {
	l        *loop
	h        handoff
	decode   []*engine.Engine
	transfer float64
	osl      int
}

func (s *prefillSink) FirstToken(*engine.Request, float64) {}
func (s *prefillSink) Finished(r *engine.Request, t float64) {
	// The first token reaches the user with the KV hand-off.
	land := t + s.transfer
	s.h[r.ID] = &handedOff{arrival: r.Arrival, first: land}
	id, isl := r.ID, r.ISL
	s.l.after(land, func(now float64) error {
		i := leastLoaded(s.decode)
		return s.decode[i].Submit(&engine.Request{ID: id, ISL: isl, OSL: s.osl, Worker: i}, now)
	})
}

// decodeSink measures finished requests and closes the user loop.
type decodeSink struct {
	l    *loop
	c    *collector
	h    handoff
	next func(float64) error
}

// FirstToken is the decode engine admitting a request. The user's stream
// comes from the decode worker, which reserves the request's cache before
// the hand-off: a request that waits for a decode slot waits in its TTFT,
// not in its TPOT.
func (s *decodeSink) FirstToken(r *engine.Request, t float64) {
	if h := s.h[r.ID]; h != nil && t > h.first {
		h.first, h.wait = t, t-h.first
	}
}
func (s *decodeSink) Finished(r *engine.Request, t float64) {
	h := s.h[r.ID]
	if h == nil {
		h = &handedOff{} // every decode request comes through prefillSink; zeros otherwise
	}
	delete(s.h, r.ID)
	r.Arrival = h.arrival
	s.c.finishedAfterWait(r, h.first, t, h.wait)
	s.l.after(t, s.next)
}

// Disaggregated estimates a prefill pool and a decode pool serving the workload.
func Disaggregated(d Disagg, wl Workload, opt Options) (*Result, error) {
	if err := wl.validate(); err != nil {
		return nil, err
	}
	if d.PrefillWorkers < 1 || d.DecodeWorkers < 1 {
		return nil, fmt.Errorf("prefill-workers and decode-workers must be >= 1")
	}
	pc, dc := d.Prefill.Config(), d.Decode.Config()
	pm, dm := d.Prefill.Memory(), d.Decode.Memory()
	res := &Result{Mode: "disagg", GPUs: d.PrefillWorkers*pc.GPUs() + d.DecodeWorkers*dc.GPUs(),
		Concurrency: wl.Concurrency, Memory: &pm, DecodeMemory: &dm, KVCacheTokens: dm.KVTokens * d.DecodeWorkers}
	res.MaxConcurrency = d.DecodeWorkers * min(dc.MaxSeqs, dm.KVTokens/(wl.ISL+wl.OSL))
	if err := d.Prefill.CheckFit(wl.ISL + 1); err != nil {
		return res, fmt.Errorf("prefill: %w", err)
	}
	if err := d.Decode.CheckFit(wl.ISL + wl.OSL); err != nil {
		return res, fmt.Errorf("decode: %w", err)
	}
	res.Fits = true
	transfer := perf.KVTransferTime(wl.ISL, d.Prefill, d.Decode, d.SameDomain)
	res.KVTransferMs = transfer * 1e3
	res.HandoffFixedMs = perf.HandoffFixed(d.Prefill) * 1e3
	build := func(l *loop, c *collector, plain bool) (func(float64) error, *perf.Worker, int, error) {
		h := handoff{}
		ps := &prefillSink{l: l, h: h, transfer: transfer, osl: wl.OSL}
		ds := &decodeSink{l: l, c: c, h: h}
		// Each pool's workers step their attention-DP ranks together.
		pe, de := engine.WorkerConfig(engine.Prefill, d.Prefill), engine.WorkerConfig(engine.Decode, d.Decode)
		pe.NoFastForward, de.NoFastForward = plain, plain
		prefill, err := l.addWorkers(pe, d.PrefillWorkers, pc.DP, 0, d.Prefill, ps)
		if err != nil {
			return nil, nil, 0, err
		}
		if ps.decode, err = l.addWorkers(de, d.DecodeWorkers, dc.DP, 0, d.Decode, ds); err != nil {
			return nil, nil, 0, err
		}
		var nextID int64
		fronts := make([]engine.APIServer, d.PrefillWorkers)
		pending := make([]int, d.PrefillWorkers)
		par, ser := d.Prefill.FrontendSplit(wl.ISL)
		ds.next = func(now float64) error {
			nextID++
			id := nextID
			arrival := c.stamp(now)
			// The router sends the request to the least-loaded prefill
			// worker, whose API server handles it before its engine.
			i := leastLoadedWith(prefill, pending)
			pending[i]++
			l.after(fronts[i].Admit(now, par, ser), func(at float64) error {
				pending[i]--
				// A prefill engine computes the prompt and the first token only.
				r := &engine.Request{ID: id, ISL: wl.ISL, OSL: 1, Worker: i}
				if err := prefill[i].Submit(r, at); err != nil {
					return err
				}
				r.Arrival = arrival
				return nil
			})
			return nil
		}
		return ds.next, d.Decode, (wl.Concurrency + d.DecodeWorkers - 1) / d.DecodeWorkers, nil
	}
	return res, measure(res, build, wl, opt)
}
