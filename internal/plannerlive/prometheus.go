package plannerlive

import (
	"context"
	"fmt"
	"math"
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
	Window  time.Duration
	Dialect Dialect // zero: vLLM's names
	// TTFTPercentile and ITLPercentile (0: none) are read with histogram_quantile.
	TTFTPercentile, ITLPercentile float64
}

// NewPromSource connects to a Prometheus server at url.
func NewPromSource(url, prefillSel, decodeSel string, window time.Duration, d Dialect) (*PromSource, error) {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", url, err)
	}
	return &PromSource{API: promv1.NewAPI(c), PrefillSelector: prefillSel, DecodeSelector: decodeSel, Window: window, Dialect: d}, nil
}

// Observe implements MetricsSource. A query without data makes the
// observation stale: the planner then holds, never scales to zero.
func (p *PromSource) Observe(ctx context.Context, now time.Time) planner.Observation {
	o := planner.Observation{Time: float64(now.Unix()), Interval: p.Window.Seconds()}
	w := fmt.Sprintf("%ds", int(p.Window.Seconds()))
	d := p.Dialect
	if d.Success == "" {
		d = VLLM
	}
	inc := func(metric, sel string) string { return fmt.Sprintf("sum(increase(%s{%s}[%s]))", metric, sel, w) }
	itl := func(suffix string) string {
		q := inc(d.ITL[0]+suffix, p.DecodeSelector)
		for _, alt := range d.ITL[1:] {
			q += " or " + inc(alt+suffix, p.DecodeSelector)
		}
		return q
	}
	q := map[string]string{
		"requests":   inc(d.Success, p.PrefillSelector),
		"prompt":     inc(d.Prompt, p.PrefillSelector),
		"done":       inc(d.Success, p.DecodeSelector),
		"generation": inc(d.Generation, p.DecodeSelector),
		"ttftSum":    inc(d.TTFT+"_sum", p.PrefillSelector),
		"ttftCount":  inc(d.TTFT+"_count", p.PrefillSelector),
		"itlSum":     itl("_sum"),
		"itlCount":   itl("_count"),
		"inFlight":   fmt.Sprintf("sum(%s{%s}) + sum(%s{%s})", d.Running, p.PrefillSelector, d.Waiting, p.PrefillSelector),
		"kv":         fmt.Sprintf("avg(%s{%s})", d.KV, p.DecodeSelector),
	}
	v := map[string]float64{}
	for _, name := range []string{"requests", "prompt", "done", "generation", "ttftSum", "ttftCount", "itlSum", "itlCount", "inFlight", "kv"} {
		x, err := p.scalar(ctx, q[name], now)
		if err != nil {
			o.Stale, o.Reason = true, err.Error()
			return o
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > 1e12 {
			// Never round NaN or 1e30 into a request count: hold instead.
			o.Stale, o.Reason = true, fmt.Sprintf("prometheus query %s: implausible value %g", name, x)
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
	quantile := func(pct float64, metric, sel string) float64 {
		q := fmt.Sprintf("histogram_quantile(%g, sum by (le) (increase(%s_bucket{%s}[%s])))", pct/100, metric, sel, w)
		x, err := p.scalar(ctx, q, now)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0 // no completions in the window: the mean stands in
		}
		return x * 1e3
	}
	if p.TTFTPercentile > 0 && v["ttftCount"] > 0 {
		o.TTFTQms = quantile(p.TTFTPercentile, d.TTFT, p.PrefillSelector)
	}
	if p.ITLPercentile > 0 && v["itlCount"] > 0 {
		o.ITLQms = quantile(p.ITLPercentile, d.ITL[0], p.DecodeSelector)
	}
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
