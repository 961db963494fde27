// Package estimate turns a user's query (model, device, parallelism,
// workload) into a serving estimate. It is the pure core behind
// `gpuplane estimate` and the calibration.
package estimate

import (
	"errors"
	"fmt"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// Query is one estimate request. JSON keys are the CLI flag names with "_"
// for "-", so a JSONL file of queries reads like a list of command lines.
type Query struct {
	Model       string `json:"model"`
	GPU         string `json:"gpu"`
	Slice       string `json:"slice,omitempty"`
	Precision   string `json:"precision,omitempty"`
	KVPrecision string `json:"kv_precision,omitempty"`
	Backend     string `json:"backend,omitempty"`
	Mode        string `json:"mode,omitempty"`
	TP          int    `json:"tp,omitempty"`
	PP          int    `json:"pp,omitempty"`
	EP          int    `json:"ep,omitempty"`
	// DP is attention data parallelism: ranks of tp GPUs with their own
	// requests and cache, sharing the MoE layers (tp x dp GPUs per worker).
	DP                   int     `json:"dp,omitempty"`
	Workers              int     `json:"workers,omitempty"`
	PrefillTP            int     `json:"prefill_tp,omitempty"`
	DecodeTP             int     `json:"decode_tp,omitempty"`
	PrefillPP            int     `json:"prefill_pp,omitempty"`
	DecodePP             int     `json:"decode_pp,omitempty"`
	PrefillEP            int     `json:"prefill_ep,omitempty"`
	DecodeEP             int     `json:"decode_ep,omitempty"`
	PrefillDP            int     `json:"prefill_dp,omitempty"`
	DecodeDP             int     `json:"decode_dp,omitempty"`
	PrefillWorkers       int     `json:"prefill_workers,omitempty"`
	DecodeWorkers        int     `json:"decode_workers,omitempty"`
	SameNode             *bool   `json:"same_node,omitempty"`
	ISL                  int     `json:"isl"`
	OSL                  int     `json:"osl"`
	Concurrency          int     `json:"concurrency"`
	MaxBatchedTokens     int     `json:"max_batched_tokens,omitempty"`
	MaxSeqs              int     `json:"max_seqs,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	// KVAdmission is how engines admit requests into the KV cache: whole
	// (reserve prompt and output, never evict) or on-demand; empty takes
	// the backend's (perf.Admission).
	KVAdmission string `json:"kv_admission,omitempty"`
	// SpecTokens and SpecAccept turn on speculative decoding (MTP, EAGLE):
	// tokens drafted per decode step, and the mean tokens a sequence gains
	// per step (perf.Config).
	SpecTokens int     `json:"spec_tokens,omitempty"`
	SpecAccept float64 `json:"spec_accept,omitempty"`
	// Harness is the benchmark client to reproduce: steady (default),
	// burst or queued; RequestsPerUser is how many requests each of its
	// users sends (default 4 under steady, 5 under burst and queued).
	Harness         string `json:"harness,omitempty"`
	RequestsPerUser int    `json:"requests_per_user,omitempty"`
	// Breakdown asks where the iterations' time goes (Output.Breakdown).
	Breakdown bool `json:"breakdown,omitempty"`
}

// Defaults are the embedded defaults: the reference scenario's model and
// workload on one H100.
func Defaults() Query {
	return Query{Model: "Qwen/Qwen3-32B", GPU: "h100_sxm", Precision: "fp8", Backend: "vllm", Mode: "agg",
		TP: 1, PP: 1, Workers: 1, ISL: 4000, OSL: 500, Concurrency: 32}
}

// Env is what an estimate reads: the catalog and the model parameters.
type Env struct {
	Catalog *catalog.Catalog
	Params  *perf.Params
}

// Output is an estimate together with the query it answers.
type Output struct {
	*serving.Result
	Model     string `json:"model"`
	Device    string `json:"device"`
	Backend   string `json:"backend"`
	Precision string `json:"precision"`
	KV        string `json:"kv_precision"`
	TP        int    `json:"tp,omitempty"`
	PP        int    `json:"pp,omitempty"`
	EP        int    `json:"ep,omitempty"`
	DP        int    `json:"dp,omitempty"`
	PrefillTP int    `json:"prefill_tp,omitempty"`
	DecodeTP  int    `json:"decode_tp,omitempty"`
	PrefillDP int    `json:"prefill_dp,omitempty"`
	DecodeDP  int    `json:"decode_dp,omitempty"`
	// SpecTokens and SpecAccept echo the query's speculative decoding.
	SpecTokens int     `json:"spec_tokens,omitempty"`
	SpecAccept float64 `json:"spec_accept,omitempty"`
	Prefill    int     `json:"prefill_workers,omitempty"`
	Decode     int     `json:"decode_workers,omitempty"`
	Workers    int     `json:"workers,omitempty"`
	// PoolsSized says the query gave no worker counts and the prefill and
	// decode counts above were sized to its concurrency (serving.PoolSizes).
	PoolsSized bool   `json:"pools_sized,omitempty"`
	ISL        int    `json:"isl"`
	OSL        int    `json:"osl"`
	Harness    string `json:"harness"`
	// TTFTInterval and TPOTInterval are 80% intervals (p10, p90) from the
	// held-out errors of this kind of query, when the parameters carry them.
	TTFTInterval *[2]float64 `json:"ttft_ms_interval,omitempty"`
	TPOTInterval *[2]float64 `json:"tpot_ms_interval,omitempty"`
	// IntervalKind names the kind of measured runs the intervals come from.
	IntervalKind string `json:"interval_kind,omitempty"`
	// Breakdown splits a decode step and a prompt into their parts, when
	// the query asks for it.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
	// Notes say how the query was read where that differs from its
	// letter (a tp taken as attention data parallelism).
	Notes []string `json:"notes,omitempty"`
	Error string   `json:"error,omitempty"`
}

// noteSpec says how speculative decoding is priced, and what is not.
func (o *Output) noteSpec(c perf.Config) {
	if c.SpecTokens == 0 {
		return
	}
	o.Notes = append(o.Notes, fmt.Sprintf("speculative decoding: each decode step drafts %d token(s) a sequence (one layer pass each) and verifies %d; a sequence gains %g tokens a step on average, so tpot is a step over %g. The draft is held as one more layer (weights and cache); the intervals come from measured runs that do not say whether they drafted",
		c.SpecTokens, c.SpecTokens+1, c.SpecAccept, c.SpecAccept))
}

// noteDPFromTP records that role's tp was read as attention data parallelism.
func (o *Output) noteDPFromTP(role string, c perf.Config) {
	if !c.DPFromTP {
		return
	}
	o.Notes = append(o.Notes, fmt.Sprintf("%stp %d does not divide %s's %d attention heads: read as %d GPUs running attention data-parallel (dp %d, tp 1) with the experts over all of them (ep %d), as TensorRT-LLM and SGLang run such a worker with attention DP on; give dp to choose another split",
		role, c.DP, c.Model.Name, c.Model.AttentionHeads, c.DP, c.DP, c.EP))
}

// noteContext warns of requests longer than the model's context: engines
// refuse them unless the model is served with its RoPE scaling (YaRN) on,
// which the estimate does not check.
func (o *Output) noteContext(m *catalog.Model, tokens int) {
	if n := m.ContextNote(tokens); n != "" {
		o.Notes = append(o.Notes, n)
	}
}

// noteArchitecture says when the model's architecture class is none the
// embedded catalog has: it is priced from the sizes its config gives (layers,
// widths, heads, experts, MLA, linear attention, windows), and anything else
// in that architecture is not.
func (o *Output) noteArchitecture(m *catalog.Model) {
	if m.Architecture == "" || catalog.EmbeddedArchitecture(m.Architecture) {
		return
	}
	o.Notes = append(o.Notes, fmt.Sprintf("architecture %s is none of the embedded catalog's models': it is priced from the sizes its config gives (layers, widths, heads, experts, MLA, linear attention, sliding windows), and any other feature of it is not priced", m.Architecture))
}

// noteADPHold says that the worker's attention-DP ranks hold prompts for
// each other, which shows as TTFT.
func (o *Output) noteADPHold(w *perf.Worker) {
	c := w.Config()
	if n := w.ADPBalanceIters(); c.DP > 1 && n > 0 {
		o.Notes = append(o.Notes, fmt.Sprintf("%s balances its %d attention-DP ranks: while every rank decodes and some rank has no prompt, a new prompt waits, up to %d iterations; the wait is in TTFT (`gpuplane calibrate adp`)",
			c.Backend, c.DP, n))
	}
}

// noteQueue says when more users run than the deployment holds at once,
// its engines' KV caches counted at the requests' mean length (prompt and
// half the output, as in steady state), or at their whole length where the
// engine reserves it at admission (w.ReservesFullRequest), and their
// sequence caps: the rest wait for a slot, and the wait is in their TTFT.
// An MLA model's latent
// cache is whole on every tensor-parallel GPU (the heads share it), so
// attention data parallelism holds about tp times as many requests.
func (o *Output) noteQueue(wl serving.Workload, engines int, m *perf.Memory, w *perf.Worker) {
	if m == nil || engines < 1 {
		return
	}
	c := w.Config()
	length, at := wl.ISL+wl.OSL/2, "their mean length"
	if w.ReservesFullRequest() {
		length, at = wl.ISL+wl.OSL, "their whole length, set aside at admission under kv admission whole"
	}
	held := engines * min(c.MaxSeqs, m.KVTokens/length)
	if wl.Concurrency <= held {
		return
	}
	reqs := fmt.Sprintf("%d requests", held)
	if held == 1 {
		reqs = "1 request"
	}
	n := fmt.Sprintf("concurrency %d exceeds the %s the deployment holds at once (KV cache at %s, sequence cap): the rest wait for a slot, and their TTFT includes the wait",
		wl.Concurrency, reqs, at)
	if c.Model.MLA != nil && c.TP > 1 && c.DP == 1 {
		n += fmt.Sprintf("; %s's latent (MLA) cache is whole on each of the %d tensor-parallel GPUs, so attention data parallelism (dp %d, tp 1) holds about %d times as many",
			c.Model.Name, c.TP, c.TP, c.TP)
	}
	o.Notes = append(o.Notes, n)
}

// noteWideTP points a MoE worker of more than 8 tensor-parallel GPUs
// without expert parallelism at attention DP: its experts are cut into
// slices a fraction of a GEMM tile wide, which wide MoE deployments avoid
// by spreading whole experts over the GPUs. The query is priced as given.
func (o *Output) noteWideTP(role string, c perf.Config) {
	if c.Model.MoE == nil || c.TP <= 8 || c.EP > 1 || c.DP > 1 {
		return
	}
	// The ep suggested must divide the GPUs and not exceed the experts,
	// as perf.Config's checks require.
	ep := min(c.TP, c.Model.MoE.Experts)
	for c.TP%ep != 0 {
		ep--
	}
	o.Notes = append(o.Notes, fmt.Sprintf("%stp %d with no ep cuts each of %s's experts into %d slices of %d of its %d FFN columns; MoE workers this wide often run attention data-parallel with whole experts spread over the GPUs: give %sdp %d, %stp 1 and %sep %d to price that",
		role, c.TP, c.Model.Name, c.TP, max(c.Model.MoE.IntermediateSize/c.TP, 1), c.Model.MoE.IntermediateSize, role, c.TP, role, role, ep))
}

// noteWorker passes on what the worker's pricing says of itself.
func (o *Output) noteWorker(role string, w *perf.Worker) {
	for _, n := range w.Notes() {
		o.Notes = append(o.Notes, role+n)
	}
}

// withIntervals attaches the held-out intervals of the query's kind. A
// deployment that does not fit has no latency, so it gets no interval.
func (o *Output) withIntervals(p *perf.Params, b perf.Backend, moe bool, mode string) {
	if o.Result == nil || !o.Result.Fits || p == nil {
		return
	}
	key := perf.IntervalKey(b, moe, mode)
	k, why := p.IntervalFor(key)
	if why != "" {
		o.Notes = append(o.Notes, "no 80% interval: "+why)
	}
	if k == nil {
		return
	}
	ttft := k.TTFT.Interval(o.TTFTms)
	o.TTFTInterval, o.IntervalKind = &ttft, key
	if o.OSL >= 2 { // one output token has no TPOT to bound
		tpot := k.TPOT.Interval(o.TPOTms)
		o.TPOTInterval = &tpot
	}
}

// BaseConfig resolves the query's model, device, backend, precisions and
// scheduler overrides; parallelism is left to the caller.
func BaseConfig(env Env, q Query) (perf.Config, error) { return baseConfig(env, q) }

// baseConfig resolves the query's model, device, backend and precisions.
func baseConfig(env Env, q Query) (perf.Config, error) {
	m, err := env.Catalog.Model(q.Model)
	ckptModel, ckptPrecision, quantised := env.Catalog.QuantizedCheckpoint(q.Model)
	if err != nil && quantised {
		m, err = env.Catalog.Model(ckptModel) // e.g. Qwen/Qwen3-8B-AWQ
	}
	if err != nil {
		return perf.Config{}, fmt.Errorf("model: %w", err)
	}
	dev, err := env.Catalog.Device(q.GPU, q.Slice)
	if err != nil {
		return perf.Config{}, fmt.Errorf("gpu: %w", err)
	}
	be, err := perf.ParseBackend(q.Backend)
	if err != nil {
		return perf.Config{}, fmt.Errorf("backend: %w", err)
	}
	var wp, kvp catalog.Precision
	if q.Precision != "" {
		if wp, err = catalog.ParsePrecision(q.Precision); err != nil {
			return perf.Config{}, fmt.Errorf("precision: %w", err)
		}
	}
	if wp == "" && quantised {
		wp = ckptPrecision // a quantised checkpoint's own format
	}
	if q.KVPrecision != "" {
		if kvp, err = catalog.ParsePrecision(q.KVPrecision); err != nil {
			return perf.Config{}, fmt.Errorf("kv_precision: %w", err)
		}
	}
	adm, err := perf.ParseAdmission(q.KVAdmission)
	if err != nil {
		return perf.Config{}, fmt.Errorf("kv_admission: %w", err)
	}
	return perf.Config{Model: m, Device: dev, Backend: be, Weights: wp, KV: kvp, EP: q.EP,
		MaxBatchedTokens: q.MaxBatchedTokens, MaxSeqs: q.MaxSeqs, MemoryUtilization: q.GPUMemoryUtilization,
		SpecTokens: q.SpecTokens, SpecAccept: q.SpecAccept, Admission: adm}, nil
}

// Run answers one query. When the model does not fit, the returned Output
// has Fits=false and the error is a *perf.FitError with a suggestion.
func Run(env Env, q Query, opt serving.Options) (*Output, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	base, err := baseConfig(env, q)
	if err != nil {
		return nil, err
	}
	if opt.Harness == "" {
		if opt.Harness, err = serving.ParseHarness(q.Harness); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		if q.RequestsPerUser < 0 || q.RequestsPerUser == 1 {
			return nil, fmt.Errorf("requests_per_user: %d; use at least 2, or 0 for the harness's default", q.RequestsPerUser)
		}
		opt.Rounds = q.RequestsPerUser
	}
	dev := base.Device
	wl := serving.Workload{ISL: q.ISL, OSL: q.OSL, Concurrency: q.Concurrency}
	out := &Output{Model: base.Model.Name, Device: dev.Name(), Backend: string(base.Backend), ISL: q.ISL, OSL: q.OSL,
		Harness: string(opt.Harness), SpecTokens: base.SpecTokens, SpecAccept: base.SpecAccept}
	out.noteContext(base.Model, q.ISL+q.OSL)
	out.noteArchitecture(base.Model)
	out.noteSpec(base)
	var res *serving.Result
	var cfgUsed perf.Config
	switch q.Mode {
	case "", "agg":
		if q.PrefillTP != 0 || q.DecodeTP != 0 {
			return nil, fmt.Errorf("prefill_tp/decode_tp: only with mode disagg; use tp for mode agg")
		}
		if q.PrefillDP != 0 || q.DecodeDP != 0 || q.PrefillEP != 0 || q.DecodeEP != 0 {
			return nil, fmt.Errorf("prefill_dp/decode_dp/prefill_ep/decode_ep: only with mode disagg; use dp and ep for mode agg")
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"prefill_pp", q.PrefillPP != 0}, {"decode_pp", q.DecodePP != 0}, {"prefill_workers", q.PrefillWorkers != 0},
			{"decode_workers", q.DecodeWorkers != 0}, {"same_node", q.SameNode != nil}} {
			if k.set {
				return nil, fmt.Errorf("%s: only with mode disagg; mode agg takes pp and workers", k.key)
			}
		}
		cfg := base
		cfg.TP, cfg.PP, cfg.DP = q.TP, q.PP, q.DP
		w, err := perf.NewWorker(cfg, env.Params)
		if err != nil {
			return nil, err
		}
		cfgUsed = w.Config()
		out.TP, out.PP, out.EP, out.DP, out.Workers = cfgUsed.TP, cfgUsed.PP, cfgUsed.EP, cfgUsed.DP, max(q.Workers, 1)
		out.noteDPFromTP("", cfgUsed)
		out.noteWideTP("", cfgUsed)
		out.noteWorker("", w)
		out.noteADPHold(w)
		// Each attention-DP rank runs its own engine.
		res, err = serving.Aggregated(w, max(q.Workers, 1)*cfgUsed.DP, wl, opt)
		if err = fitHint(err, cfgUsed, env, q.ISL+q.OSL); err != nil && res == nil {
			return nil, err
		}
		out.Result = res
		if res != nil {
			out.noteQueue(wl, max(q.Workers, 1)*cfgUsed.DP, res.Memory, w)
		}
		if q.Breakdown {
			out.Breakdown = breakdown(w, w, res, max(q.Workers, 1)*cfgUsed.DP, wl)
		}
		out.Precision, out.KV = string(cfgUsed.Weights), string(cfgUsed.KV)
		out.withIntervals(env.Params, base.Backend, base.Model.MoE != nil, "agg")
		return out, err
	case "disagg":
		if q.TP > 1 {
			return nil, fmt.Errorf("tp: mode disagg takes prefill_tp and decode_tp instead")
		}
		if q.DP > 1 {
			return nil, fmt.Errorf("dp: mode disagg takes prefill_dp and decode_dp instead")
		}
		if q.PP > 1 {
			return nil, fmt.Errorf("pp: mode disagg takes prefill_pp and decode_pp instead")
		}
		if q.Workers > 1 {
			return nil, fmt.Errorf("workers: mode disagg takes prefill_workers and decode_workers instead")
		}
		pc, dc := base, base
		pc.TP, pc.PP, pc.DP = max(q.PrefillTP, 1), q.PrefillPP, q.PrefillDP
		dc.TP, dc.PP, dc.DP = max(q.DecodeTP, 1), q.DecodePP, q.DecodeDP
		if q.PrefillEP != 0 {
			pc.EP = q.PrefillEP
		}
		if q.DecodeEP != 0 {
			dc.EP = q.DecodeEP
		}
		pw, err := perf.NewWorker(pc, env.Params)
		if err != nil {
			return nil, fmt.Errorf("prefill: %w", err)
		}
		dw, err := perf.NewWorker(dc, env.Params)
		if err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		pdp, ddp := pw.Config().DP, dw.Config().DP
		out.noteDPFromTP("prefill_", pw.Config())
		out.noteDPFromTP("decode_", dw.Config())
		out.noteWideTP("prefill_", pw.Config())
		out.noteWideTP("decode_", dw.Config())
		if pc.Weights == dc.Weights && pc.Backend == dc.Backend {
			out.noteWorker("", pw) // the pools share the weights and the kernels
		} else {
			out.noteWorker("prefill: ", pw)
			out.noteWorker("decode: ", dw)
		}
		np, nd := q.PrefillWorkers, q.DecodeWorkers
		if np == 0 || nd == 0 {
			// No counts given: the pools a deployment for this many users runs.
			sp, sd, err := serving.PoolSizes(pw, dw, wl, nd)
			if err != nil {
				return nil, err
			}
			if np == 0 {
				np = sp
			}
			if nd == 0 {
				nd = sd
			}
			out.PoolsSized = true
		}
		same := pc.TP*pdp*np+dc.TP*ddp*nd <= dev.GPU.MaxTP()
		if q.SameNode != nil {
			same = *q.SameNode
		}
		cfgUsed = dw.Config()
		out.PrefillTP, out.DecodeTP, out.PrefillDP, out.DecodeDP = pw.Config().TP, cfgUsed.TP, pdp, ddp
		out.Prefill, out.Decode = np, nd
		res, err = serving.Disaggregated(serving.Disagg{Prefill: pw, Decode: dw, PrefillWorkers: np * pdp,
			DecodeWorkers: nd * ddp, SameDomain: same}, wl, opt)
		if err = fitHint(err, cfgUsed, env, q.ISL+q.OSL); err != nil && res == nil {
			return nil, err
		}
		out.Result = res
		if res != nil {
			out.noteQueue(wl, nd*ddp, res.DecodeMemory, dw)
		}
		if q.Breakdown {
			out.Breakdown = breakdown(pw, dw, res, nd*ddp, wl)
		}
		out.Precision, out.KV = string(cfgUsed.Weights), string(cfgUsed.KV)
		out.withIntervals(env.Params, base.Backend, base.Model.MoE != nil, "disagg")
		return out, err
	}
	return nil, fmt.Errorf("mode: %q is not agg or disagg", q.Mode)
}

func fitHint(err error, cfg perf.Config, env Env, seq int) error {
	var fe *perf.FitError
	if errors.As(err, &fe) && fe.Suggestion == "" {
		fe.Suggestion = perf.SuggestFit(cfg, env.Params, env.Catalog, seq)
	}
	return err
}

// MaxConcurrency is the largest number of requests of the query's size
// that one aggregated worker admits at once (KV cache and sequence cap).
func MaxConcurrency(env Env, q Query) (int, error) {
	cfg, err := baseConfig(env, q)
	if err != nil {
		return 0, err
	}
	cfg.TP, cfg.PP = q.TP, q.PP
	w, err := perf.NewWorker(cfg, env.Params)
	if err != nil {
		return 0, err
	}
	return min(w.Config().MaxSeqs, w.Memory().KVTokens/(q.ISL+q.OSL)), nil
}
