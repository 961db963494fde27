package emulate

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Config describes one emulated worker.
type Config struct {
	// Query carries model, gpu, slice, precision, backend, tp, ep and dp
	// (estimate's flags): with dp, the worker is dp attention-DP ranks.
	Query estimate.Query
	// Role is agg, prefill or decode.
	Role string
	// ServedName is the model name clients send (default: the query's model).
	ServedName string
	// MaxModelLen caps prompt + output tokens (default: the model's context
	// length, or the KV cache's capacity when smaller).
	MaxModelLen      int
	DefaultMaxTokens int
}

// New builds the worker's engine on the performance model, its metrics on
// reg and its HTTP server. Run the returned Realtime to make it serve.
func New(env estimate.Env, cfg Config, reg *prometheus.Registry, clock Clock) (*Server, error) {
	role, err := parseRole(cfg.Role)
	if err != nil {
		return nil, err
	}
	if cfg.MaxModelLen < 0 || cfg.DefaultMaxTokens < 0 {
		return nil, fmt.Errorf("max-model-len %d and default-max-tokens %d: want >= 1 tokens, or 0 for the default", cfg.MaxModelLen, cfg.DefaultMaxTokens)
	}
	base, err := estimate.BaseConfig(env, cfg.Query)
	if err != nil {
		return nil, err
	}
	base.TP, base.PP, base.EP, base.DP = cfg.Query.TP, cfg.Query.PP, cfg.Query.EP, cfg.Query.DP
	w, err := perf.NewWorker(base, env.Params)
	if err != nil {
		return nil, err
	}
	name := cfg.ServedName
	if name == "" {
		name = cfg.Query.Model
	}
	srv := &Server{Model: name, DefaultMaxTokens: cfg.DefaultMaxTokens, Registry: reg, Clock: clock}
	if srv.DefaultMaxTokens <= 0 {
		srv.DefaultMaxTokens = 256
	}
	// The metrics read the engine's state, which exists once the engine does.
	var rt *Realtime
	m, err := NewMetrics(reg, name, func() (int, int, float64) { return rt.Stats() })
	if err != nil {
		return nil, err
	}
	if rt, err = NewRealtime(w, role, clock, m); err != nil {
		return nil, err
	}
	srv.RT = rt
	// Like vLLM: the model's context length, unless the KV cache is smaller.
	srv.MaxModelLen = rt.KVTokens()
	if mp := base.Model.MaxPositionEmbeddings; mp > 0 && mp < srv.MaxModelLen {
		srv.MaxModelLen = mp
	}
	if cfg.MaxModelLen > 0 {
		if cfg.MaxModelLen > rt.KVTokens() {
			return nil, fmt.Errorf("max-model-len: %d exceeds the KV cache of %d tokens on %s", cfg.MaxModelLen, rt.KVTokens(), base.Device.Name())
		}
		srv.MaxModelLen = cfg.MaxModelLen
	}
	return srv, nil
}

func parseRole(s string) (engine.Role, error) {
	switch s {
	case "", "agg":
		return engine.Aggregated, nil
	case "prefill":
		return engine.Prefill, nil
	case "decode":
		return engine.Decode, nil
	}
	return 0, fmt.Errorf("role: %q, want agg, prefill or decode", s)
}
