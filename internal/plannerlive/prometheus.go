package plannerlive

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gpuplane/gpuplane/internal/planner"
)

// PromSource reads the pools' vLLM metrics through the Prometheus HTTP
// query API. PrefillSelector and DecodeSelector are PromQL label matchers
// that pick each pool's series, e.g. `model_name="Qwen/Qwen3-32B",role="prefill"`.
type PromSource struct {
	API                             promv1.API
	PrefillSelector, DecodeSelector string
	// Window is the range each rate is taken over (the planner interval).
	Window time.Duration
}

// NewPromSource connects to a Prometheus server at url.
func NewPromSource(url, prefillSel, decodeSel string, window time.Duration) (*PromSource, error) {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", url, err)
	}
	return &PromSource{API: promv1.NewAPI(c), PrefillSelector: prefillSel, DecodeSelector: decodeSel, Window: window}, nil
}

// Observe implements MetricsSource. A query without data makes the
// observation stale: the planner then holds, never scales to zero.
func (p *PromSource) Observe(ctx context.Context, now time.Time) planner.Observation {
	o := planner.Observation{Time: float64(now.Unix()), Interval: p.Window.Seconds()}
	w := fmt.Sprintf("%ds", int(p.Window.Seconds()))
	inc := func(metric, sel string) string { return fmt.Sprintf("sum(increase(%s{%s}[%s]))", metric, sel, w) }
	q := map[string]string{
		"requests":   inc(mSuccess, p.PrefillSelector),
		"prompt":     inc(mPrompt, p.PrefillSelector),
		"done":       inc(mSuccess, p.DecodeSelector),
		"generation": inc(mGeneration, p.DecodeSelector),
		"ttftSum":    inc(mTTFT+"_sum", p.PrefillSelector),
		"ttftCount":  inc(mTTFT+"_count", p.PrefillSelector),
		"itlSum":     inc(mITL+"_sum", p.DecodeSelector),
		"itlCount":   inc(mITL+"_count", p.DecodeSelector),
		"inFlight":   fmt.Sprintf("sum(%s{%s}) + sum(%s{%s})", mRunning, p.PrefillSelector, mWaiting, p.PrefillSelector),
		"kv":         fmt.Sprintf("avg(%s{%s})", mKV, p.DecodeSelector),
	}
	v := map[string]float64{}
	for _, name := range []string{"requests", "prompt", "done", "generation", "ttftSum", "ttftCount", "itlSum", "itlCount", "inFlight", "kv"} {
		x, err := p.scalar(ctx, q[name], now)
		if err != nil {
			o.Stale, o.Reason = true, err.Error()
			return o
		}
		v[name] = x
	}
	o.Requests = int(v["requests"] + 0.5)
	if v["requests"] > 0 {
		o.MeanISL = v["prompt"] / v["requests"]
	}
	if v["done"] > 0 {
		o.MeanOSL = v["generation"] / v["done"]
	}
	if v["ttftCount"] > 0 {
		o.TTFTms = v["ttftSum"] / v["ttftCount"] * 1e3
	}
	if v["itlCount"] > 0 {
		o.ITLms = v["itlSum"] / v["itlCount"] * 1e3
	}
	o.QueueDepth, o.KVUse = int(v["inFlight"]+0.5), v["kv"]
	return o
}

func (p *PromSource) scalar(ctx context.Context, query string, at time.Time) (float64, error) {
	res, _, _, err := p.API.Query(ctx, query, at)
	if err != nil {
		return 0, fmt.Errorf("prometheus query %s: %w", query, err)
	}
	vec, ok := res.(model.Vector)
	if !ok || len(vec) == 0 {
		return 0, fmt.Errorf("prometheus query %s: no data (metrics missing or stale)", query)
	}
	return float64(vec[0].Value), nil
}
