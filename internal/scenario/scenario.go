// Package scenario reads a `gpuplane simulate` scenario file and builds the
// simulator from it: model and device from the catalog, pools from the
// performance model, the workload from its generators or a trace.
package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/gpuplane/gpuplane/internal/capacity"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/sim"
	"github.com/gpuplane/gpuplane/internal/slo"
	"github.com/gpuplane/gpuplane/internal/strict"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// Scenario is the file format.
type Scenario struct {
	Model     string `json:"model"`
	GPU       string `json:"gpu"`
	Slice     string `json:"slice,omitempty"`
	Precision string `json:"precision,omitempty"`
	Backend   string `json:"backend,omitempty"`
	// SpecTokens and SpecAccept run every pool with speculative decoding
	// (perf.Config): tokens drafted a step, mean tokens gained a step.
	SpecTokens int     `json:"specTokens,omitempty"`
	SpecAccept float64 `json:"specAccept,omitempty"`
	// KVAdmission is how every pool's engines admit requests into the KV
	// cache: whole or on-demand (perf.Admission); empty takes the backend's.
	KVAdmission     string     `json:"kvAdmission,omitempty"`
	Deployment      Deployment `json:"deployment"`
	Workload        Workload   `json:"workload"`
	SLO             SLO        `json:"slo"`
	DurationSeconds float64    `json:"durationSeconds"`
	IntervalSeconds float64    `json:"intervalSeconds,omitempty"`
	Seed            uint64     `json:"seed,omitempty"`
	// Planner, when set, scales the prefill and decode pools while the run goes on.
	Planner *planner.Config `json:"planner,omitempty"`
}

// Deployment is the serving topology.
type Deployment struct {
	Mode                string  `json:"mode"`
	Router              string  `json:"router,omitempty"`
	Agg                 *Pool   `json:"agg,omitempty"`
	Prefill             *Pool   `json:"prefill,omitempty"`
	Decode              *Pool   `json:"decode,omitempty"`
	StartupDelaySeconds float64 `json:"startupDelaySeconds,omitempty"`
}

// Pool is one pool's workers.
type Pool struct {
	TP int `json:"tp,omitempty"`
	// EP spreads a MoE model's experts over EP GPUs. DP makes each worker
	// DP attention-DP ranks of TP GPUs, which step together; a worker is
	// then TP x DP GPUs (EP = TP x DP puts the experts on all of them).
	EP       int `json:"ep,omitempty"`
	DP       int `json:"dp,omitempty"`
	Replicas int `json:"replicas"`
}

// engines is the number of engines the pool starts: a worker's
// attention-DP ranks are one engine each.
func (p *Pool) engines() int { return p.Replicas * max(p.DP, 1) }

// Workload is what arrives.
type Workload struct {
	Kind  string     `json:"kind"` // poisson | users | trace
	Rate  *RateSpec  `json:"rate,omitempty"`
	ISL   *DistSpec  `json:"isl,omitempty"`
	OSL   *DistSpec  `json:"osl,omitempty"`
	Users *UsersSpec `json:"users,omitempty"`
	Trace *TraceSpec `json:"trace,omitempty"`
	// Burst adds concurrent users on top of a poisson or trace workload.
	Burst *BurstSpec `json:"burst,omitempty"`
}

// BurstSpec is a crowd of users arriving on top of the base traffic: each
// sends a request, waits for its answer, thinks, and sends the next.
type BurstSpec struct {
	N               int       `json:"count"`
	StartSeconds    float64   `json:"startSeconds"`
	DurationSeconds float64   `json:"durationSeconds"`
	RampSeconds     float64   `json:"rampSeconds,omitempty"`
	ThinkMs         *DistSpec `json:"thinkMs,omitempty"`
	ISL             *DistSpec `json:"isl"`
	OSL             *DistSpec `json:"osl"`
}

// RateSpec picks one rate profile (requests per second).
type RateSpec struct {
	Constant *float64          `json:"constant,omitempty"`
	Step     *workload.Step    `json:"step,omitempty"`
	Ramp     *workload.Ramp    `json:"ramp,omitempty"`
	Diurnal  *workload.Diurnal `json:"diurnal,omitempty"`
}

// DistSpec picks one token-count distribution.
type DistSpec struct {
	Fixed     *int                `json:"fixed,omitempty"`
	Normal    *workload.Normal    `json:"normal,omitempty"`
	LogNormal *workload.LogNormal `json:"lognormal,omitempty"`
}

// UsersSpec is a concurrency-driven workload.
type UsersSpec struct {
	N           int     `json:"count"`
	ThinkMs     int     `json:"thinkMs,omitempty"`
	RampSeconds float64 `json:"rampSeconds,omitempty"`
}

// TraceSpec replays a trace file (relative to the scenario file).
type TraceSpec struct {
	File    string  `json:"file"`
	Format  string  `json:"format"`
	Speedup float64 `json:"speedup,omitempty"`
	From    float64 `json:"fromSeconds,omitempty"`
	To      float64 `json:"toSeconds,omitempty"`
}

// SLO is the latency target.
type SLO struct {
	TTFTMs float64 `json:"ttftMs"`
	ITLMs  float64 `json:"itlMs"`
	// TTFTPercentile and ITLPercentile judge that percentile of the run's
	// requests (e.g. 90 or 99; 0: the mean); the planner sizes for them.
	TTFTPercentile float64 `json:"ttftPercentile,omitempty"`
	ITLPercentile  float64 `json:"itlPercentile,omitempty"`
}

func (o SLO) validate() error {
	if !(o.TTFTMs >= 0) || !(o.ITLMs >= 0) || math.IsInf(o.TTFTMs+o.ITLMs, 0) {
		return fmt.Errorf("slo: ttftMs %g and itlMs %g must be finite and >= 0 (0: no target)", o.TTFTMs, o.ITLMs)
	}
	if err := slo.CheckPercentile("slo.ttftPercentile", o.TTFTPercentile); err != nil {
		return err
	}
	return slo.CheckPercentile("slo.itlPercentile", o.ITLPercentile)
}

// Load reads and strictly decodes a scenario file.
func Load(path string) (*Scenario, error) {
	b, err := strict.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	s, err := Parse(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return s, nil
}

// Parse decodes a scenario strictly; a relative trace file is taken from dir.
func Parse(b []byte, dir string) (*Scenario, error) {
	var s Scenario
	if err := strict.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if s.Workload.Trace != nil && s.Workload.Trace.File != "" && !filepath.IsAbs(s.Workload.Trace.File) {
		s.Workload.Trace.File = filepath.Join(dir, s.Workload.Trace.File)
	}
	return &s, nil
}

// Build turns a scenario into a ready simulator; onRequest may be nil.
func Build(s *Scenario, cat *catalog.Catalog, params *perf.Params, onRequest func(sim.Record)) (*sim.Sim, error) {
	sm, _, err := buildSim(s, cat, params, onRequest)
	return sm, err
}

// BuildPlanned builds the simulation and, when the scenario has a planner
// section, the planner that scales it, on the performance model of its
// prefill and decode workers.
func BuildPlanned(s *Scenario, cat *catalog.Catalog, params *perf.Params, onRequest func(sim.Record)) (*sim.Sim, *planner.Planner, error) {
	sm, pools, err := buildSim(s, cat, params, onRequest)
	if err != nil || s.Planner == nil {
		return sm, nil, err
	}
	if s.Deployment.Mode != "disagg" {
		return nil, nil, fmt.Errorf("planner: scales prefill and decode pools; set deployment.mode: disagg")
	}
	cfg := *s.Planner
	if cfg.TTFTms == 0 {
		cfg.TTFTms = s.SLO.TTFTMs
	}
	if cfg.ITLms == 0 {
		cfg.ITLms = s.SLO.ITLMs
	}
	if cfg.TTFTPercentile == 0 {
		cfg.TTFTPercentile = s.SLO.TTFTPercentile
	}
	if cfg.ITLPercentile == 0 {
		cfg.ITLPercentile = s.SLO.ITLPercentile
	}
	if cfg.StartupDelay == 0 {
		cfg.StartupDelay = s.Deployment.StartupDelaySeconds
	}
	pc, dc := pools[0].Config(), pools[1].Config()
	if cfg.PrefillGPUs == 0 {
		cfg.PrefillGPUs = pc.WorkerGPUs()
	}
	if cfg.DecodeGPUs == 0 {
		cfg.DecodeGPUs = dc.WorkerGPUs()
	}
	if cfg.PrefillRanks == 0 {
		cfg.PrefillRanks = pc.DP
	}
	model, err := capacity.New(pools[0], pools[1], true)
	if err != nil {
		return nil, nil, err
	}
	p, err := planner.New(cfg, model)
	if err != nil {
		return nil, nil, err
	}
	return sm, p, nil
}

func buildSim(s *Scenario, cat *catalog.Catalog, params *perf.Params, onRequest func(sim.Record)) (*sim.Sim, []*perf.Worker, error) {
	if s.DurationSeconds <= 0 {
		return nil, nil, fmt.Errorf("durationSeconds: must be > 0")
	}
	if err := s.SLO.validate(); err != nil {
		return nil, nil, err
	}
	if err := s.checkLimits(); err != nil {
		return nil, nil, err
	}
	m, err := cat.Model(s.Model)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	dev, err := cat.Device(s.GPU, s.Slice)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: %w", err)
	}
	be := perf.VLLM
	if s.Backend != "" {
		if be, err = perf.ParseBackend(s.Backend); err != nil {
			return nil, nil, fmt.Errorf("backend: %w", err)
		}
	}
	var prec catalog.Precision
	if s.Precision != "" {
		if prec, err = catalog.ParsePrecision(s.Precision); err != nil {
			return nil, nil, fmt.Errorf("precision: %w", err)
		}
	}
	if err := perf.CheckSpec(s.SpecTokens, s.SpecAccept); err != nil {
		return nil, nil, fmt.Errorf("specTokens/specAccept: %w", err)
	}
	adm, err := perf.ParseAdmission(s.KVAdmission)
	if err != nil {
		return nil, nil, fmt.Errorf("kvAdmission: %w", err)
	}
	mkWorker := func(field string, p *Pool) (*perf.Worker, error) {
		if p == nil {
			return nil, fmt.Errorf("deployment.%s: missing", field)
		}
		if p.Replicas < 0 {
			return nil, fmt.Errorf("deployment.%s.replicas: must be >= 0", field)
		}
		if p.Replicas == 0 && s.Planner == nil {
			// Without a planner to start workers, no request would ever be
			// served and the run would report only its queue.
			return nil, fmt.Errorf("deployment.%s.replicas: 0 and no planner section to start any; give 1 or more", field)
		}
		w, err := perf.NewWorker(perf.Config{Model: m, Device: dev, Backend: be, Weights: prec, TP: p.TP, EP: p.EP, DP: p.DP,
			SpecTokens: s.SpecTokens, SpecAccept: s.SpecAccept, Admission: adm}, params)
		if err != nil {
			return nil, fmt.Errorf("deployment.%s: %w", field, err)
		}
		// Fail before simulating when a typical request cannot be held.
		seq := s.Workload.ISL.typical() + s.Workload.OSL.typical()
		if field == "prefill" {
			seq = s.Workload.ISL.typical() + 1
		}
		if err := w.CheckFit(max(seq, 1)); err != nil {
			return nil, fmt.Errorf("deployment.%s: %w; %s", field, err, perf.SuggestFit(w.Config(), params, cat, max(seq, 1)))
		}
		return w, nil
	}
	d := s.Deployment
	var workers []*perf.Worker
	cfg := sim.Config{Router: d.Router, Interval: s.IntervalSeconds,
		TTFTSLO: s.SLO.TTFTMs / 1e3, ITLSLO: s.SLO.ITLMs / 1e3, TTFTPercentile: s.SLO.TTFTPercentile, ITLPercentile: s.SLO.ITLPercentile}
	if err := unusedSections(s); err != nil {
		return nil, nil, err
	}
	switch d.Mode {
	case "agg", "":
		w, err := mkWorker("agg", d.Agg)
		if err != nil {
			return nil, nil, err
		}
		cfg.Pools = []sim.PoolSpec{{Name: "agg", Role: engine.Aggregated, Worker: w, Replicas: d.Agg.Replicas, StartupDelay: d.StartupDelaySeconds}}
	case "disagg":
		pw, err := mkWorker("prefill", d.Prefill)
		if err != nil {
			return nil, nil, err
		}
		dw, err := mkWorker("decode", d.Decode)
		if err != nil {
			return nil, nil, err
		}
		cfg.Pools = []sim.PoolSpec{
			{Name: "prefill", Role: engine.Prefill, Worker: pw, Replicas: d.Prefill.Replicas, StartupDelay: d.StartupDelaySeconds},
			{Name: "decode", Role: engine.Decode, Worker: dw, Replicas: d.Decode.Replicas, StartupDelay: d.StartupDelaySeconds}}
		cfg.KVTransfer = func(isl int) float64 { return perf.KVTransferTime(isl, pw, dw, true) }
		workers = []*perf.Worker{pw, dw}
	default:
		return nil, nil, fmt.Errorf("deployment.mode: %q is not agg or disagg", d.Mode)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	src, users, err := buildWorkload(s, rng)
	if err != nil {
		return nil, nil, err
	}
	cfg.Users = users
	cfg.DrainTimeout = 600
	cfg.OnRequest = onRequest
	sm, err := sim.New(cfg, src)
	return sm, workers, err
}
