// Package plannerlive runs the planner's core against a live cluster: it
// reads serving metrics (the Prometheus HTTP query API, or the workers'
// /metrics endpoints directly), asks the planner, and sets replicas through
// the Kubernetes scale subresource. It is the planner's I/O edge.
package plannerlive

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuplane/gpuplane/internal/planner"
)

// Dialect names an engine's serving metrics as the engine exports them.
type Dialect struct {
	Success, Prompt, Generation string   // counters: finished requests, prompt and output tokens
	TTFT                        string   // histogram (seconds)
	ITL                         []string // histogram (seconds); the first the endpoint has
	Running, Waiting            string   // gauges
	KV                          string   // gauge, 0..1
}

// Dialects of the supported engines.
var (
	VLLM = Dialect{Success: "vllm:request_success_total", Prompt: "vllm:prompt_tokens_total",
		Generation: "vllm:generation_tokens_total", TTFT: "vllm:time_to_first_token_seconds",
		ITL:     []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
		Running: "vllm:num_requests_running", Waiting: "vllm:num_requests_waiting", KV: "vllm:kv_cache_usage_perc"}
	SGLang = Dialect{Success: "sglang:num_requests_total", Prompt: "sglang:prompt_tokens_total",
		Generation: "sglang:generation_tokens_total", TTFT: "sglang:time_to_first_token_seconds",
		ITL:     []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"},
		Running: "sglang:num_running_reqs", Waiting: "sglang:num_queue_reqs", KV: "sglang:token_usage"}
)

// ParseDialect names an engine's dialect.
func ParseDialect(engine string) (Dialect, error) {
	switch engine {
	case "", "vllm":
		return VLLM, nil
	case "sglang":
		return SGLang, nil
	}
	return Dialect{}, fmt.Errorf("metrics.engine: %q is not vllm or sglang", engine)
}

// counters is one scrape of a pool, summed over its workers.
type counters struct {
	success, prompt, generation float64
	ttftSum, ttftCount          float64
	itlSum, itlCount            float64
	inFlight                    float64
	kv                          float64 // mean over workers
	ttftB, itlB                 buckets
}

// ScrapeSource reads the workers' /metrics endpoints directly, for clusters
// without Prometheus, and turns the change between two scrapes into an
// observation.
type ScrapeSource struct {
	Prefill, Decode []string // metrics URLs
	// PrefillTargets and DecodeTargets, when set, find the workers at each
	// scrape (e.g. pods by label); their /metrics are read.
	PrefillTargets, DecodeTargets Targets
	Dialect                       Dialect // zero: vLLM's names
	Client                        *http.Client
	// TTFTPercentile and ITLPercentile (0: none) are read from the histograms' buckets.
	TTFTPercentile, ITLPercentile float64
	last                          map[string]counters // per metrics URL
	lastAt                        time.Time
}

// Targets finds a pool's workers' base URLs.
type Targets interface {
	Workers(ctx context.Context) ([]string, error)
}

func (s *ScrapeSource) urls(ctx context.Context, static []string, t Targets) ([]string, error) {
	if t == nil {
		return static, nil
	}
	ws, err := t.Workers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = strings.TrimSuffix(w, "/") + "/metrics"
	}
	return out, nil
}

// Observe implements MetricsSource. Deltas are taken per worker, so
// workers that come and go with scaling do not disturb the counts: a new
// worker counts from zero, a gone one no longer counts.
func (s *ScrapeSource) Observe(ctx context.Context, now time.Time) planner.Observation {
	o := planner.Observation{Time: float64(now.Unix())}
	fail := func(err error) planner.Observation {
		o.Stale, o.Reason = true, err.Error()
		return o
	}
	pu, err := s.urls(ctx, s.Prefill, s.PrefillTargets)
	if err != nil {
		return fail(err)
	}
	du, err := s.urls(ctx, s.Decode, s.DecodeTargets)
	if err != nil {
		return fail(err)
	}
	pre, preEach, err := s.scrapePool(ctx, pu)
	if err != nil {
		return fail(err)
	}
	dec, decEach, err := s.scrapePool(ctx, du)
	if err != nil {
		return fail(err)
	}
	last, lastAt := s.last, s.lastAt
	s.last, s.lastAt = map[string]counters{}, now
	for u, c := range preEach {
		s.last[u] = c
	}
	for u, c := range decEach {
		s.last[u] = c
	}
	if last == nil {
		o.Stale, o.Reason = true, "first scrape: no interval to compare with yet"
		return o
	}
	prev := [2]counters{baseline(last, preEach), baseline(last, decEach)}
	return fold(o, &prev, &[2]counters{pre, dec}, now.Sub(lastAt).Seconds(), s.TTFTPercentile, s.ITLPercentile)
}

// baseline sums the last scrape of the workers scraped now; a new worker,
// or one whose counters went back (restarted), starts from zero.
func baseline(last, now map[string]counters) counters {
	var b counters
	for u, c := range now {
		l, ok := last[u]
		if !ok || c.success < l.success {
			continue
		}
		b.success += l.success
		b.prompt += l.prompt
		b.generation += l.generation
		b.ttftSum, b.ttftCount = b.ttftSum+l.ttftSum, b.ttftCount+l.ttftCount
		b.itlSum, b.itlCount = b.itlSum+l.itlSum, b.itlCount+l.itlCount
		b.ttftB, b.itlB = b.ttftB.plus(l.ttftB), b.itlB.plus(l.itlB)
	}
	return b
}

// fold turns two scrapes into the observation of the interval between
// them; ttftPct and itlPct (0: none) are the SLO's percentiles.
func fold(o planner.Observation, prev, cur *[2]counters, seconds, ttftPct, itlPct float64) planner.Observation {
	p, d := cur[0], cur[1]
	pp, pd := prev[0], prev[1]
	if p.success < pp.success || d.success < pd.success {
		o.Stale, o.Reason = true, "counters went back (a worker restarted): waiting for the next scrape"
		return o
	}
	o.Interval = seconds
	for _, c := range []counters{p, d, pp, pd} {
		for _, v := range []float64{c.success, c.prompt, c.generation, c.ttftSum, c.ttftCount, c.itlSum, c.itlCount, c.inFlight, c.kv} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e15 {
				o.Stale, o.Reason = true, fmt.Sprintf("scrape: implausible metric value %g: holding", v)
				return o
			}
		}
	}
	reqs := p.success - pp.success
	o.Requests = int(reqs + 0.5)
	if reqs > 0 {
		o.MeanISL = (p.prompt - pp.prompt) / reqs
	}
	if done := d.success - pd.success; done > 0 {
		o.MeanOSL = (d.generation - pd.generation) / done
	}
	if n := p.ttftCount - pp.ttftCount; n > 0 {
		o.TTFTms = (p.ttftSum - pp.ttftSum) / n * 1e3
	}
	if n := d.itlCount - pd.itlCount; n > 0 {
		o.ITLms = (d.itlSum - pd.itlSum) / n * 1e3
	}
	if ttftPct > 0 {
		o.TTFTQms = p.ttftB.minus(pp.ttftB).quantile(ttftPct/100) * 1e3
	}
	if itlPct > 0 {
		o.ITLQms = d.itlB.minus(pd.itlB).quantile(itlPct/100) * 1e3
	}
	o.QueueDepth = int(p.inFlight)
	o.KVUse = d.kv
	return o
}

func (s *ScrapeSource) dialect() Dialect {
	if s.Dialect.Success == "" {
		return VLLM
	}
	return s.Dialect
}

func (s *ScrapeSource) scrapePool(ctx context.Context, urls []string) (counters, map[string]counters, error) {
	var c counters
	each := map[string]counters{}
	d := s.dialect()
	if len(urls) == 0 {
		return c, nil, fmt.Errorf("scrape: no metrics URLs for a pool")
	}
	for _, u := range urls {
		// A URL listed twice is one worker: summed twice, its counters
		// would outrun the baseline, which holds it once.
		if _, dup := each[u]; dup {
			continue
		}
		fams, err := s.scrape(ctx, u)
		if err != nil {
			return c, nil, err
		}
		before := c
		c.success += sum(fams[d.Success])
		c.prompt += sum(fams[d.Prompt])
		c.generation += sum(fams[d.Generation])
		ts, tc := histogram(fams[d.TTFT])
		var is, ic float64
		var ib buckets
		for _, name := range d.ITL {
			if f, ok := fams[name]; ok {
				is, ic = histogram(f)
				ib = histogramBuckets(f)
				break
			}
		}
		tb := histogramBuckets(fams[d.TTFT])
		c.ttftB, c.itlB = c.ttftB.plus(tb), c.itlB.plus(ib)
		c.ttftSum, c.ttftCount = c.ttftSum+ts, c.ttftCount+tc
		c.itlSum, c.itlCount = c.itlSum+is, c.itlCount+ic
		c.inFlight += sum(fams[d.Running]) + sum(fams[d.Waiting])
		c.kv += sum(fams[d.KV])
		each[u] = counters{success: c.success - before.success, prompt: c.prompt - before.prompt, generation: c.generation - before.generation,
			ttftSum: c.ttftSum - before.ttftSum, ttftCount: c.ttftCount - before.ttftCount, itlSum: c.itlSum - before.itlSum, itlCount: c.itlCount - before.itlCount,
			ttftB: tb, itlB: ib}
	}
	c.kv /= float64(len(each))
	return c, each, nil
}

func (s *ScrapeSource) scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: HTTP %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	if d := s.dialect(); fams[d.Success] == nil {
		return nil, fmt.Errorf("scrape %s: no %s: not an endpoint of this engine (metrics.engine)", url, d.Success)
	}
	return fams, nil
}

// sum adds a counter's or gauge's samples over their labels.
func sum(f *dto.MetricFamily) float64 {
	if f == nil {
		return 0
	}
	t := 0.0
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			t += m.GetCounter().GetValue()
		case m.Gauge != nil:
			t += m.GetGauge().GetValue()
		case m.Untyped != nil:
			t += m.GetUntyped().GetValue()
		}
	}
	return t
}

// histogram returns a histogram's sum and count over its labels.
func histogram(f *dto.MetricFamily) (s, n float64) {
	if f == nil {
		return 0, 0
	}
	for _, m := range f.GetMetric() {
		if h := m.GetHistogram(); h != nil {
			s += h.GetSampleSum()
			n += float64(h.GetSampleCount())
		}
	}
	return s, n
}
