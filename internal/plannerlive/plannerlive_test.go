package plannerlive_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/planner/plannertest"
	"github.com/gpuplane/gpuplane/internal/plannerlive"
	"github.com/gpuplane/gpuplane/internal/plannerlive/plannerlivetest"
)

// vllmText renders a worker's /metrics as vLLM exports them.
func vllmText(success, prompt, gen, ttftSum, ttftN, itlSum, itlN, running, waiting, kv float64) string {
	const m = `model_name="Qwen/Qwen3-32B"`
	return fmt.Sprintf(`# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",%[1]s} %[2]g
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{%[1]s} %[3]g
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{%[1]s} %[4]g
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{%[1]s,le="+Inf"} %[6]g
vllm:time_to_first_token_seconds_sum{%[1]s} %[5]g
vllm:time_to_first_token_seconds_count{%[1]s} %[6]g
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{%[1]s,le="+Inf"} %[8]g
vllm:inter_token_latency_seconds_sum{%[1]s} %[7]g
vllm:inter_token_latency_seconds_count{%[1]s} %[8]g
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{%[1]s} %[9]g
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{%[1]s} %[10]g
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{%[1]s} %[11]g
`, m, success, prompt, gen, ttftSum, ttftN, itlSum, itlN, running, waiting, kv)
}

// worker serves a changing /metrics page over real HTTP.
func worker(t *testing.T, pages ...string) *httptest.Server {
	var i atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := min(int(i.Add(1))-1, len(pages)-1)
		io.WriteString(w, pages[n])
	}))
	t.Cleanup(s.Close)
	return s
}

func TestScrapeSourceFoldsTwoScrapes(t *testing.T) {
	pre := worker(t, vllmText(100, 400000, 0, 20, 100, 0, 0, 1, 0, 0.1), vllmText(160, 640000, 0, 35, 160, 0, 0, 3, 2, 0.2))
	dec := worker(t, vllmText(90, 0, 45000, 0, 0, 900, 45000, 30, 0, 0.4), vllmText(150, 0, 75000, 0, 0, 1500, 75000, 40, 0, 0.6))
	src := &plannerlive.ScrapeSource{Prefill: []string{pre.URL}, Decode: []string{dec.URL}}
	t0 := time.Unix(1000, 0)
	if o := src.Observe(context.Background(), t0); !o.Stale {
		t.Fatalf("the first scrape has nothing to compare with: %+v", o)
	}
	o := src.Observe(context.Background(), t0.Add(30*time.Second))
	if o.Stale || o.Interval != 30 || o.Requests != 60 || o.MeanISL != 4000 || o.MeanOSL != 500 {
		t.Errorf("interval %+v: want 60 requests of 4000/500 over 30 s", o)
	}
	if o.TTFTms != 250 || o.ITLms != 20 || o.QueueDepth != 5 || o.KVUse != 0.6 {
		t.Errorf("latencies and state %+v: want TTFT 250 ms, ITL 20 ms, 5 waiting for a first token, KV 0.6", o)
	}
}

// A worker listed twice (two pods handed one IP) is one worker: its
// counters count once, as they do in the baseline.
func TestScrapeSourceWorkerListedTwice(t *testing.T) {
	pre := worker(t, vllmText(100, 400000, 0, 20, 100, 0, 0, 1, 0, 0.1), vllmText(160, 640000, 0, 35, 160, 0, 0, 3, 2, 0.2))
	dec := worker(t, vllmText(90, 0, 45000, 0, 0, 900, 45000, 30, 0, 0.4), vllmText(150, 0, 75000, 0, 0, 1500, 75000, 40, 0, 0.6))
	src := &plannerlive.ScrapeSource{Prefill: []string{pre.URL, pre.URL}, Decode: []string{dec.URL, dec.URL}}
	t0 := time.Unix(1000, 0)
	src.Observe(context.Background(), t0)
	o := src.Observe(context.Background(), t0.Add(30*time.Second))
	if o.Stale || o.Requests != 60 || o.MeanISL != 4000 || o.QueueDepth != 5 || o.KVUse != 0.6 {
		t.Errorf("observation %+v: want 60 requests of 4000 tokens, 5 in flight, KV 0.6, as from one listing", o)
	}
}

// SGLang's names, with the older ITL histogram name.
func TestScrapeSourceSGLang(t *testing.T) {
	page := func(n, prompt, gen, ttft, itl float64) string {
		return fmt.Sprintf(`# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m"} %[1]g
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} %[2]g
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} %[3]g
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{model_name="m",le="+Inf"} %[1]g
sglang:time_to_first_token_seconds_sum{model_name="m"} %[4]g
sglang:time_to_first_token_seconds_count{model_name="m"} %[1]g
# TYPE sglang:time_per_output_token_seconds histogram
sglang:time_per_output_token_seconds_bucket{model_name="m",le="+Inf"} %[3]g
sglang:time_per_output_token_seconds_sum{model_name="m"} %[5]g
sglang:time_per_output_token_seconds_count{model_name="m"} %[3]g
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 2
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 1
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.3
`, n, prompt, gen, ttft, itl)
	}
	pre := worker(t, page(0, 0, 0, 0, 0), page(10, 20000, 0, 3, 0))
	dec := worker(t, page(0, 0, 0, 0, 0), page(10, 0, 2000, 0, 50))
	src := &plannerlive.ScrapeSource{Prefill: []string{pre.URL}, Decode: []string{dec.URL}, Dialect: plannerlive.SGLang}
	src.Observe(context.Background(), time.Unix(0, 0))
	o := src.Observe(context.Background(), time.Unix(10, 0))
	if o.Stale || o.Requests != 10 || o.MeanISL != 2000 || o.MeanOSL != 200 || o.TTFTms != 300 || o.ITLms != 25 || o.QueueDepth != 3 || o.KVUse != 0.3 {
		t.Errorf("SGLang observation %+v", o)
	}
}

func TestScrapeSourceStaleOnErrors(t *testing.T) {
	notVLLM := worker(t, "# TYPE up gauge\nup 1\n")
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for name, urls := range map[string]string{"unreachable": down.URL, "not vLLM": notVLLM.URL} {
		src := &plannerlive.ScrapeSource{Prefill: []string{urls}, Decode: []string{urls}}
		if o := src.Observe(context.Background(), time.Now()); !o.Stale || o.Reason == "" {
			t.Errorf("%s: %+v should be stale with a reason", name, o)
		}
	}
}

// A fake Prometheus answering the query API over real HTTP.
func TestPromSource(t *testing.T) {
	values := map[string]string{
		"sum(increase(vllm:request_success_total{role=\"prefill\"}":  "60",
		"sum(increase(vllm:prompt_tokens_total{role=\"prefill\"}":    "240000",
		"sum(increase(vllm:request_success_total{role=\"decode\"}":   "60",
		"sum(increase(vllm:generation_tokens_total{role=\"decode\"}": "30000",
		"sum(increase(vllm:time_to_first_token_seconds_sum":          "15",
		"sum(increase(vllm:time_to_first_token_seconds_count":        "60",
		"sum(increase(vllm:inter_token_latency_seconds_sum":          "600",
		"sum(increase(vllm:inter_token_latency_seconds_count":        "30000",
		"sum(vllm:num_requests_running":                              "4",
		"avg(vllm:kv_cache_usage_perc":                               "0.5",
	}
	prom := plannerlivetest.NewPrometheus(values)
	defer prom.Close()
	src, err := plannerlive.NewPromSource(prom.URL, `role="prefill"`, `role="decode"`, 30*time.Second, plannerlive.VLLM)
	if err != nil {
		t.Fatal(err)
	}
	o := src.Observe(context.Background(), time.Unix(1000, 0))
	if o.Stale || o.Requests != 60 || o.MeanISL != 4000 || o.MeanOSL != 500 || o.TTFTms != 250 || o.ITLms != 20 || o.QueueDepth != 4 || o.KVUse != 0.5 {
		t.Errorf("observation %+v", o)
	}
	// A NaN or absurd sample makes the tick stale instead of a request count.
	for _, bad := range []string{"NaN", "+Inf", "-3", "1e30"} {
		prom.Values["sum(increase(vllm:request_success_total{role=\"prefill\"}"] = bad
		if o := src.Observe(context.Background(), time.Unix(1015, 0)); !o.Stale || !strings.Contains(o.Reason, "implausible") {
			t.Errorf("requests %s: %+v, want a stale observation", bad, o)
		}
	}
	prom.Values["sum(increase(vllm:request_success_total{role=\"prefill\"}"] = "60"
	// Percentiles come from histogram_quantile when the SLO names one.
	prom.Values["histogram_quantile(0.9, sum by (le) (increase(vllm:time_to_first_token_seconds_bucket"] = "0.4"
	src.TTFTPercentile = 90
	if o := src.Observe(context.Background(), time.Unix(1020, 0)); o.Stale || o.TTFTQms != 400 {
		t.Errorf("p90 TTFT %g ms, want 400: %+v", o.TTFTQms, o)
	}
	prom.Missing.Store(true)
	if o := src.Observe(context.Background(), time.Unix(1030, 0)); !o.Stale || !strings.Contains(o.Reason, "no data") {
		t.Errorf("missing series must make the observation stale: %+v", o)
	}
}

func newRunner(t *testing.T, script []planner.Observation, dry bool) (*plannerlive.Runner, *plannerlivetest.Scaler, *plannerlivetest.Scaler, *prometheus.Registry) {
	p, err := planner.New(planner.Config{TTFTms: 500, ITLms: 30, Interval: 30, Predictor: "constant", TTFTTarget: 1, ITLTarget: 1},
		plannertest.Capacity{PrefillRPS: 4, DecodeRPS: 10, TTFTBase: 125, ITLBase: 10})
	if err != nil {
		t.Fatal(err)
	}
	pre, dec := &plannerlivetest.Scaler{N: 1}, &plannerlivetest.Scaler{N: 1}
	r := &plannerlive.Runner{Planner: p, Metrics: &plannerlivetest.Metrics{Script: script}, Prefill: pre, Decode: dec, DryRun: dry, Log: logr.Discard()}
	reg := prometheus.NewRegistry()
	if err := r.Register(reg); err != nil {
		t.Fatal(err)
	}
	return r, pre, dec, reg
}

func TestRunnerScalesAndServesMetrics(t *testing.T) {
	burst := planner.Observation{Interval: 30, Requests: 360, MeanISL: 4000, MeanOSL: 500, TTFTms: 200, ITLms: 20}
	r, pre, dec, reg := newRunner(t, []planner.Observation{burst}, false)
	now := time.Unix(1000, 0)
	d, err := r.Tick(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if pre.N != 3 || dec.N != 2 || d.Prefill != 3 {
		t.Errorf("12 req/s: scaled to %d + %d, want 3 + 2", pre.N, dec.N)
	}
	// Metrics missing: hold, never scale to zero.
	if d, _ := r.Tick(context.Background(), now.Add(30*time.Second)); !d.Held || pre.N != 3 || dec.N != 2 {
		t.Errorf("stale tick %+v changed the pools to %d + %d", d, pre.N, dec.N)
	}
	srv := httptest.NewServer(r.Handler(reg, func() time.Time { return now.Add(45 * time.Second) }))
	defer srv.Close()
	body := get(t, srv.URL+"/metrics", 200)
	for _, want := range []string{`gpuplane_planner_desired_replicas{pool="prefill"} 3`, `gpuplane_planner_decisions_total{outcome="held"} 1`,
		`gpuplane_planner_decisions_total{outcome="scaled"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	get(t, srv.URL+"/healthz", 200)
	late := httptest.NewServer(r.Handler(reg, func() time.Time { return now.Add(time.Hour) }))
	defer late.Close()
	get(t, late.URL+"/healthz", 503)
}

func TestRunnerAdvisoryModeOnlyReports(t *testing.T) {
	burst := planner.Observation{Interval: 30, Requests: 360, MeanISL: 4000, MeanOSL: 500, TTFTms: 200, ITLms: 20}
	r, pre, dec, _ := newRunner(t, []planner.Observation{burst}, true)
	d, err := r.Tick(context.Background(), time.Unix(1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if d.Prefill != 3 || pre.Writes != 0 || dec.Writes != 0 {
		t.Errorf("dry run advised %d prefill and wrote %d/%d times", d.Prefill, pre.Writes, dec.Writes)
	}
}

func get(t *testing.T, url string, code int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		t.Errorf("GET %s: %d, want %d: %s", url, resp.StatusCode, code, b)
	}
	return string(b)
}

// A dry run without a cluster: the pools follow the advice, every
// decision reaches the hook, nothing else is touched.
func TestDryRunWithoutACluster(t *testing.T) {
	burst := planner.Observation{Interval: 30, Requests: 360, MeanISL: 4000, MeanOSL: 500, TTFTms: 200, ITLms: 20}
	r, _, _, _ := newRunner(t, []planner.Observation{burst, burst}, true)
	pre, dec := plannerlive.NewAdvised(1), plannerlive.NewAdvised(1)
	r.Prefill, r.Decode = pre, dec
	var seen []string
	r.OnDecision = func(d planner.Decision, outcome string) {
		seen = append(seen, fmt.Sprintf("%d+%d %s", d.Prefill, d.Decode, outcome))
	}
	for i := range 2 {
		if _, err := r.Tick(context.Background(), time.Unix(1000+30*int64(i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := pre.Replicas(context.Background())
	d, _ := dec.Replicas(context.Background())
	if p != 3 || d != 2 || strings.Join(seen, ", ") != "3+2 advised, 3+2 unchanged" {
		t.Errorf("advised pools at %d + %d, decisions %v", p, d, seen)
	}
}

// One pool's failed scale does not keep the other where it is, and the
// tick counts as failed.
func TestPoolsScaleIndependently(t *testing.T) {
	burst := planner.Observation{Interval: 30, Requests: 360, MeanISL: 4000, MeanOSL: 500, TTFTms: 200, ITLms: 20}
	r, pre, dec, reg := newRunner(t, []planner.Observation{burst}, false)
	pre.SetErr = errors.New("conflict")
	if _, err := r.Tick(context.Background(), time.Unix(1000, 0)); err == nil || !strings.Contains(err.Error(), "scale prefill") {
		t.Fatalf("got %v, want the prefill scale error", err)
	}
	if dec.N != 2 {
		t.Errorf("decode stayed at %d after prefill failed; want 2", dec.N)
	}
	srv := httptest.NewServer(r.Handler(reg, func() time.Time { return time.Unix(1000, 0) }))
	defer srv.Close()
	if body := get(t, srv.URL+"/metrics", 200); !strings.Contains(body, `gpuplane_planner_decisions_total{outcome="failed"} 1`) {
		t.Error("a failed scale is not counted as failed")
	}
}

type hungMetrics struct{}

func (hungMetrics) Observe(ctx context.Context, now time.Time) planner.Observation {
	<-ctx.Done()
	return planner.Observation{Time: float64(now.Unix()), Stale: true, Reason: ctx.Err().Error()}
}

type hungScaler struct{}

func (hungScaler) Replicas(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }
func (hungScaler) SetReplicas(ctx context.Context, _ int) error {
	<-ctx.Done()
	return ctx.Err()
}

// A hung Prometheus or API server costs one tick, not the loop: every call
// has a deadline inside the interval.
func TestHungUpstreamsEndInsideTheInterval(t *testing.T) {
	p, err := planner.New(planner.Config{TTFTms: 500, ITLms: 30, Interval: 0.5}, plannertest.Capacity{PrefillRPS: 4, DecodeRPS: 10, TTFTBase: 125, ITLBase: 10})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*plannerlive.Runner{
		"metrics": {Planner: p, Metrics: hungMetrics{}, Prefill: &plannerlivetest.Scaler{N: 1}, Decode: &plannerlivetest.Scaler{N: 1}, Log: logr.Discard()},
		"scale":   {Planner: p, Metrics: &plannerlivetest.Metrics{}, Prefill: hungScaler{}, Decode: hungScaler{}, Log: logr.Discard()},
	} {
		done := make(chan struct{})
		go func() {
			_, _ = r.Tick(context.Background(), time.Unix(1000, 0))
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("a hung %s call blocked the tick", name)
		}
	}
}

func TestBusyPortFailsAtStart(t *testing.T) {
	l, err := plannerlive.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := plannerlive.Listen(l.Addr().String()); err == nil || !strings.Contains(err.Error(), "listen:") {
		t.Errorf("a busy port: got %v, want an error naming the listen field", err)
	}
}
