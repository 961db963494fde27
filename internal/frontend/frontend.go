// Package frontend routes OpenAI-compatible requests to inference workers:
// to the least-busy worker in aggregated mode, or prefill first (one token)
// then decode (streamed back) in disaggregated mode. Workers come from a
// Discovery (a static list, or Kubernetes pods by label); request-level
// metrics (requests, TTFT, ITL, ISL, OSL) are exported for the planner.
package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuplane/gpuplane/internal/strict"
)

// Discovery lists the workers' base URLs of a pool.
type Discovery interface {
	Workers(ctx context.Context) ([]string, error)
}

// Frontend is the router.
type Frontend struct {
	// Agg serves aggregated; Prefill and Decode serve disaggregated (both set).
	Agg, Prefill, Decode Discovery
	Client               *http.Client
	// Refresh is how often the worker lists are re-read (default 2 s).
	Refresh time.Duration

	mu       sync.Mutex
	pools    map[string][]string
	inflight map[string]*atomic.Int64
	metrics  *metrics
}

type metrics struct {
	requests       *prometheus.CounterVec
	ttft, itl, e2e prometheus.Histogram
	isl, osl       prometheus.Histogram
	inflight       prometheus.Gauge
}

// Register creates the frontend's metrics on reg.
func (f *Frontend) Register(reg prometheus.Registerer) error {
	lat := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10, 20, 40, 80}
	tok := prometheus.ExponentialBuckets(16, 2, 14)
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuplane_frontend_requests_total",
			Help: "Requests by outcome (ok, error)."}, []string{"status"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_frontend_time_to_first_token_seconds", Help: "Time to first token as clients see it.", Buckets: lat}),
		itl: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_frontend_inter_token_latency_seconds", Help: "Gaps between streamed chunks.",
			Buckets: []float64{0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1}}),
		e2e:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_frontend_request_duration_seconds", Help: "End-to-end request time.", Buckets: lat}),
		isl:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_frontend_input_sequence_tokens", Help: "Prompt tokens per request.", Buckets: tok}),
		osl:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_frontend_output_sequence_tokens", Help: "Output tokens per request.", Buckets: tok}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuplane_frontend_inflight_requests", Help: "Requests in flight."}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.ttft, m.itl, m.e2e, m.isl, m.osl, m.inflight} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	f.metrics = m
	return nil
}

// Run refreshes the worker lists until ctx ends.
func (f *Frontend) Run(ctx context.Context) {
	every := f.Refresh
	if every <= 0 {
		every = 2 * time.Second
	}
	for {
		f.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func (f *Frontend) refresh(ctx context.Context) {
	pools := map[string][]string{}
	for name, d := range map[string]Discovery{"agg": f.Agg, "prefill": f.Prefill, "decode": f.Decode} {
		if d == nil {
			continue
		}
		ws, err := d.Workers(ctx)
		if err != nil {
			continue // keep the last list
		}
		sort.Strings(ws)
		pools[name] = ws
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pools == nil {
		f.pools, f.inflight = map[string][]string{}, map[string]*atomic.Int64{}
	}
	for name, ws := range pools {
		f.pools[name] = ws
		for _, w := range ws {
			if f.inflight[w] == nil {
				f.inflight[w] = &atomic.Int64{}
			}
		}
	}
}

// pick returns the least-busy worker of a pool, other than those tried.
func (f *Frontend) pick(pool string, tried ...string) (string, *atomic.Int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	best := ""
	for _, w := range f.pools[pool] {
		if slices.Contains(tried, w) {
			continue
		}
		if best == "" || f.inflight[w].Load() < f.inflight[best].Load() {
			best = w
		}
	}
	if best == "" {
		if len(f.pools[pool]) > 0 {
			return "", nil, fmt.Errorf("no other %s worker to retry on", pool)
		}
		return "", nil, fmt.Errorf("no %s workers available", pool)
	}
	return best, f.inflight[best], nil
}

// Workers reports the current worker lists (for status and tests).
func (f *Frontend) Workers() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for k, v := range f.pools {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Handler serves the OpenAI routes, /health and /metrics (reg).
func (f *Frontend) Handler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", f.route)
	mux.HandleFunc("POST /v1/chat/completions", f.route)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { f.forwardGet(w, r) })
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if _, _, err := f.pick(f.firstPool()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

func (f *Frontend) disagg() bool { return f.Prefill != nil && f.Decode != nil }

func (f *Frontend) firstPool() string {
	if f.disagg() {
		return "decode"
	}
	return "agg"
}

// openAIError answers in OpenAI's error shape. A 4xx is the request's
// fault (invalid_request_error); anything else is the serving side's.
func openAIError(w http.ResponseWriter, code int, msg string) {
	typ := "service_unavailable"
	if code >= 400 && code < 500 {
		typ = "invalid_request_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

// workerRefusal is a worker's own answer refusing a request (a 4xx): the
// client gets it as the worker wrote it, which names the field at fault.
type workerRefusal struct {
	code int
	body []byte
}

func (e *workerRefusal) Error() string { return strings.TrimSpace(string(e.body)) }

func (f *Frontend) forwardGet(w http.ResponseWriter, r *http.Request) {
	worker, _, err := f.pick(f.firstPool())
	if err != nil {
		openAIError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	resp, err := f.client().Get(worker + r.URL.Path)
	if err != nil {
		openAIError(w, http.StatusBadGateway, err.Error())
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (f *Frontend) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	return workerClient
}

// workerClient bounds every step before a worker's answer starts: a hung
// worker fails the request (and it is retried elsewhere) instead of holding
// it. The answer itself may stream as long as generation takes.
var workerClient = &http.Client{Transport: &http.Transport{
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	ResponseHeaderTimeout: 10 * time.Minute, // a long prompt's prefill comes first
	IdleConnTimeout:       90 * time.Second,
	MaxIdleConnsPerHost:   1024,
}}

// route sends the request on and streams the answer back, measuring it.
func (f *Frontend) route(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		openAIError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	m := f.metrics
	if m != nil {
		m.inflight.Inc()
		defer m.inflight.Dec()
	}
	pool := "agg"
	if f.disagg() {
		// Prefill: the prompt and one token, not streamed; its KV goes to decode.
		if code, err := f.prefill(r.Context(), r.URL.Path, body); err != nil {
			f.count("error")
			var refused *workerRefusal
			if errors.As(err, &refused) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(refused.code)
				_, _ = w.Write(refused.body)
				return
			}
			openAIError(w, code, "prefill: "+err.Error())
			return
		}
		pool = "decode"
	}
	resp, worker, release, err := f.post(r.Context(), pool, r.URL.Path, body)
	if err != nil {
		f.count("error")
		if worker == "" {
			openAIError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		openAIError(w, http.StatusBadGateway, fmt.Sprintf("worker %s: %v", worker, err))
		return
	}
	defer release()
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(w, resp.Body)
		f.count("error")
		return
	}
	flusher, _ := w.(http.Flusher)
	var first, last time.Time
	buf := make([]byte, 32<<10)
	var tail bytes.Buffer
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			now := time.Now()
			if first.IsZero() {
				first = now
				if m != nil {
					m.ttft.Observe(now.Sub(start).Seconds())
				}
			} else if m != nil && bytes.Contains(buf[:n], []byte("data: {")) {
				m.itl.Observe(now.Sub(last).Seconds())
			}
			last = now
			_, _ = w.Write(buf[:n])
			if flusher != nil {
				flusher.Flush()
			}
			tail.Write(buf[:n])
			if tail.Len() > 8<<10 {
				tail.Next(tail.Len() - 4<<10)
			}
		}
		if rerr != nil {
			// A client that hung up after [DONE] cancels the worker's stream
			// too: that request was still served whole.
			if bytes.Contains(tail.Bytes(), []byte("data: [DONE]")) {
				break
			}
			stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
			if !errors.Is(rerr, io.EOF) || stream {
				// The worker died mid-stream: say so in the stream instead of
				// ending it as if it were complete, and count it failed.
				if stream && r.Context().Err() == nil {
					msg, _ := json.Marshal(fmt.Sprintf("worker %s ended the stream early: %v", worker, rerr))
					fmt.Fprintf(w, "data: {\"error\":{\"message\":%s,\"type\":\"server_error\",\"code\":502}}\n\n", msg)
					if flusher != nil {
						flusher.Flush()
					}
				}
				f.count("error")
				return
			}
			break
		}
	}
	if m != nil {
		m.e2e.Observe(time.Since(start).Seconds())
		if p, c, ok := usage(tail.String()); ok {
			m.isl.Observe(float64(p))
			m.osl.Observe(float64(c))
		}
	}
	f.count("ok")
}

func (f *Frontend) count(status string) {
	if f.metrics != nil {
		f.metrics.requests.WithLabelValues(status).Inc()
	}
}

// prefill runs the prompt on a prefill worker with max_tokens 1.
func (f *Frontend) prefill(ctx context.Context, path string, body []byte) (int, error) {
	b, err := prefillBody(body)
	if err != nil {
		return http.StatusBadRequest, err
	}
	resp, worker, release, err := f.post(ctx, "prefill", path, b)
	if err != nil {
		if worker == "" {
			return http.StatusServiceUnavailable, err
		}
		return http.StatusBadGateway, fmt.Errorf("worker %s: %v", worker, err)
	}
	defer release()
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && json.Valid(msg) {
		return resp.StatusCode, &workerRefusal{code: resp.StatusCode, body: msg}
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("worker %s: %s", worker, strings.TrimSpace(string(msg)))
	}
	return http.StatusOK, nil
}

// prefillBody is the request a prefill worker gets: the client's, asking
// for one token and no stream. A body that is not a JSON object is the
// client's error.
func prefillBody(body []byte) ([]byte, error) {
	var req map[string]any
	// Numbers stay as the client wrote them: read as floats, a seed or
	// token ID past 2^53 would reach the worker changed.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := dec.Decode(&req)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		if _, what, ok := strict.TypeMismatch(err); ok {
			return nil, fmt.Errorf("request body: %s", what)
		}
		return nil, fmt.Errorf("invalid JSON body: %v", err)
	}
	if req == nil { // the body was null
		return nil, errors.New("request body: null where a JSON object is expected")
	}
	req["max_tokens"], req["stream"] = 1, false
	delete(req, "stream_options")
	return json.Marshal(req)
}

// post sends body to a worker of pool. A worker that refuses the
// connection (it is shutting down, the list is a moment old) has seen
// nothing, so the request goes to another one and the refusing worker is
// dropped until the next refresh. release ends the worker's in-flight count.
func (f *Frontend) post(ctx context.Context, pool, path string, body []byte) (*http.Response, string, func(), error) {
	var lastErr error
	var tried []string
	for range 3 {
		worker, busy, err := f.pick(pool, tried...)
		if err != nil {
			if lastErr != nil {
				return nil, "", nil, fmt.Errorf("%v (after: %v)", err, lastErr)
			}
			return nil, "", nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, worker+path, bytes.NewReader(body))
		if err != nil {
			return nil, worker, nil, fmt.Errorf("worker %s: %w", worker, err)
		}
		busy.Add(1)
		req.Header.Set("Content-Type", "application/json")
		resp, err := f.client().Do(req)
		if err == nil {
			return resp, worker, func() { busy.Add(-1) }, nil
		}
		busy.Add(-1)
		if ctx.Err() != nil {
			return nil, worker, nil, err // the client went away: nothing to retry for
		}
		// Nothing came back (refused, reset, closed before the headers):
		// the next worker gets the request. A refused dial also drops the
		// worker until the next refresh.
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			f.drop(pool, worker)
		}
		lastErr = fmt.Errorf("worker %s: %v", worker, err)
		tried = append(tried, worker)
	}
	return nil, "", nil, lastErr
}

// drop removes a worker from a pool's list until the next refresh.
func (f *Frontend) drop(pool, worker string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := f.pools[pool][:0:0]
	for _, w := range f.pools[pool] {
		if w != worker {
			ws = append(ws, w)
		}
	}
	f.pools[pool] = ws
}

// usage finds the last usage object in a response's tail.
func usage(s string) (prompt, completion int, ok bool) {
	i := strings.LastIndex(s, `"usage":`)
	if i < 0 {
		return 0, 0, false
	}
	var u struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	dec := json.NewDecoder(strings.NewReader(s[i+len(`"usage":`):]))
	if err := dec.Decode(&u); err != nil {
		return 0, 0, false
	}
	return u.PromptTokens, u.CompletionTokens, true
}
