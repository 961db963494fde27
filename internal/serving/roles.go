package serving

import (
	"fmt"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Role profiles measure one prefill or one decode engine on its own, the way
// a disaggregated deployment's pools are profiled before they are combined:
// a prefill engine's TTFT and request rate as its queue fills, and a decode
// engine's ITL and token rate as its batch grows. The configuration search
// combines them by rate matching.

// roleSink closes the user loop of a single-role run.
type roleSink struct {
	l       *loop
	c       *collector
	prefill bool
	next    func(now float64) error
}

func (s *roleSink) FirstToken(*engine.Request, float64) {}
func (s *roleSink) Finished(r *engine.Request, t float64) {
	first := r.FirstToken
	if !s.prefill {
		// The first token came from a prefill engine; the decode engine's
		// OSL-1 steps start when it admits the request.
		first = r.Arrival
	}
	s.c.finished(r, first, t)
	s.l.after(t, s.next)
}

// PrefillOnly runs Concurrency users against one prefill worker (its
// attention-DP ranks, if any, stepping together): each request is a prompt
// of ISL tokens that finishes with its first token.
// TTFT includes the API server and the queue; throughput is in requests/s
// (OutputTokensPerS counts one token a request).
func PrefillOnly(w *perf.Worker, wl Workload, opt Options) (*Result, error) {
	return roleRun(w, engine.Prefill, wl, opt)
}

// DecodeOnly runs Concurrency users against one decode worker (its
// attention-DP ranks, if any, stepping together): each request arrives with
// its prompt's KV cache and generates OSL-1 more tokens. TPOT is the decode
// step time the batch sees.
func DecodeOnly(w *perf.Worker, wl Workload, opt Options) (*Result, error) {
	return roleRun(w, engine.Decode, wl, opt)
}

func roleRun(w *perf.Worker, role engine.Role, wl Workload, opt Options) (*Result, error) {
	if err := wl.validate(); err != nil {
		return nil, err
	}
	cfg := w.Config()
	mem := w.Memory()
	dp := max(cfg.DP, 1)
	res := &Result{Mode: role.String(), GPUs: cfg.WorkerGPUs(), Concurrency: wl.Concurrency, Memory: &mem, KVCacheTokens: mem.KVTokens * dp}
	need, osl := wl.ISL+wl.OSL, wl.OSL
	if role == engine.Prefill {
		need, osl = wl.ISL+1, 1
	} else if wl.OSL < 2 {
		return nil, fmt.Errorf("osl: %d; a decode engine needs at least 2 output tokens to measure", wl.OSL)
	}
	res.MaxConcurrency = dp * min(cfg.MaxSeqs, mem.KVTokens/need)
	if err := w.CheckFit(need); err != nil {
		return res, err
	}
	res.Fits = true
	rwl := Workload{ISL: wl.ISL, OSL: osl, Concurrency: wl.Concurrency}
	build := func(l *loop, c *collector, plain bool) (func(float64) error, *perf.Worker, int, error) {
		sink := &roleSink{l: l, c: c, prefill: role == engine.Prefill}
		ec := engine.WorkerConfig(role, w)
		ec.NoFastForward = plain
		ranks, err := l.addWorkers(ec, dp, dp, 0, w, sink)
		if err != nil {
			return nil, nil, 0, err
		}
		var nextID int64
		// Each rank's API server, as in Aggregated.
		fronts := make([]engine.APIServer, dp)
		pending := make([]int, dp)
		var par, ser float64
		if role == engine.Prefill {
			par, ser = w.FrontendSplit(wl.ISL)
		}
		sink.next = func(now float64) error {
			nextID++
			id := nextID
			arrival := c.stamp(now)
			i := leastLoadedWith(ranks, pending)
			pending[i]++
			l.after(fronts[i].Admit(now, par, ser), func(at float64) error {
				pending[i]--
				r := &engine.Request{ID: id, ISL: rwl.ISL, OSL: rwl.OSL}
				if err := ranks[i].Submit(r, at); err != nil {
					return err
				}
				if role == engine.Prefill {
					r.Arrival = arrival
				}
				return nil
			})
			return nil
		}
		return sink.next, w, (wl.Concurrency + dp - 1) / dp, nil
	}
	if err := measure(res, build, rwl, opt); err != nil {
		return nil, err
	}
	if role == engine.Decode {
		// ITL over the OSL-1 decode steps; measure() divided by OSL-1 already.
		res.OutputTokensPerS = res.RequestsPerS * float64(wl.OSL-1)
		res.OutputTokensPerSPerGPU = res.OutputTokensPerS / float64(max(res.GPUs, 1))
	}
	return res, nil
}
