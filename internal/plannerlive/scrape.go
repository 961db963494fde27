// Package plannerlive runs the planner's core against a live cluster: it
// reads serving metrics (the Prometheus HTTP query API, or the workers'
// /metrics endpoints directly), asks the planner, and sets replicas through
// the Kubernetes scale subresource. It is the planner's I/O edge.
package plannerlive

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuplane/gpuplane/internal/planner"
)

// vLLM's metric names, as vLLM exports them (label model_name).
const (
	mSuccess    = "vllm:request_success_total"
	mPrompt     = "vllm:prompt_tokens_total"
	mGeneration = "vllm:generation_tokens_total"
	mTTFT       = "vllm:time_to_first_token_seconds"
	mITL        = "vllm:inter_token_latency_seconds"
	mRunning    = "vllm:num_requests_running"
	mWaiting    = "vllm:num_requests_waiting"
	mKV         = "vllm:kv_cache_usage_perc"
)

// counters is one scrape of a pool, summed over its workers.
type counters struct {
	success, prompt, generation float64
	ttftSum, ttftCount          float64
	itlSum, itlCount            float64
	inFlight                    float64
	kv                          float64 // mean over workers
}

// ScrapeSource reads the workers' /metrics endpoints directly, for clusters
// without Prometheus, and turns the change between two scrapes into an
// observation.
type ScrapeSource struct {
	Prefill, Decode []string // metrics URLs
	Client          *http.Client
	last            *[2]counters
	lastAt          time.Time
}

// Observe implements MetricsSource.
func (s *ScrapeSource) Observe(ctx context.Context, now time.Time) planner.Observation {
	o := planner.Observation{Time: float64(now.Unix())}
	pre, err := s.scrapePool(ctx, s.Prefill)
	if err == nil {
		var dec counters
		if dec, err = s.scrapePool(ctx, s.Decode); err == nil {
			cur := [2]counters{pre, dec}
			defer func() { s.last, s.lastAt = &cur, now }()
			if s.last == nil {
				o.Stale, o.Reason = true, "first scrape: no interval to compare with yet"
				return o
			}
			return fold(o, s.last, &cur, now.Sub(s.lastAt).Seconds())
		}
	}
	o.Stale, o.Reason = true, err.Error()
	return o
}

// fold turns two scrapes into the observation of the interval between them.
func fold(o planner.Observation, prev, cur *[2]counters, seconds float64) planner.Observation {
	p, d := cur[0], cur[1]
	pp, pd := prev[0], prev[1]
	if p.success < pp.success || d.success < pd.success {
		o.Stale, o.Reason = true, "counters went back (a worker restarted): waiting for the next scrape"
		return o
	}
	o.Interval = seconds
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
	o.QueueDepth = int(p.inFlight)
	o.KVUse = d.kv
	return o
}

func (s *ScrapeSource) scrapePool(ctx context.Context, urls []string) (counters, error) {
	var c counters
	if len(urls) == 0 {
		return c, fmt.Errorf("scrape: no metrics URLs for a pool")
	}
	for _, u := range urls {
		fams, err := s.scrape(ctx, u)
		if err != nil {
			return c, err
		}
		c.success += sum(fams[mSuccess])
		c.prompt += sum(fams[mPrompt])
		c.generation += sum(fams[mGeneration])
		ts, tc := histogram(fams[mTTFT])
		is, ic := histogram(fams[mITL])
		c.ttftSum, c.ttftCount = c.ttftSum+ts, c.ttftCount+tc
		c.itlSum, c.itlCount = c.itlSum+is, c.itlCount+ic
		c.inFlight += sum(fams[mRunning]) + sum(fams[mWaiting])
		c.kv += sum(fams[mKV]) / float64(len(urls))
	}
	return c, nil
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
	if _, ok := fams[mSuccess]; !ok {
		return nil, fmt.Errorf("scrape %s: no %s: not a vLLM-compatible endpoint", url, mSuccess)
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
