package frontend

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuplane/gpuplane/internal/bench"
	"github.com/gpuplane/gpuplane/internal/emulate/emulatetest"
	"github.com/gpuplane/gpuplane/internal/workers"
	"github.com/gpuplane/gpuplane/internal/workload"
)

func worker(t *testing.T, role string) (string, *prometheus.Registry) {
	return emulatetest.Start(t, role)
}

// serve starts f on a test server, its metrics on a fresh registry and
// its worker lists read once; the server closes with the test.
func serve(t *testing.T, f *Frontend) (*httptest.Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := f.Register(reg); err != nil {
		t.Fatal(err)
	}
	f.refresh(context.Background())
	ts := httptest.NewServer(f.Handler(reg))
	t.Cleanup(ts.Close)
	return ts, reg
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}

func TestDisaggregatedRouting(t *testing.T) {
	p1, preg := worker(t, "prefill")
	d1, dreg1 := worker(t, "decode")
	d2, dreg2 := worker(t, "decode")
	f := &Frontend{Prefill: workers.Static{p1}, Decode: workers.Static{d1, d2}}
	ts, _ := serve(t, f)

	s, _, err := bench.Run(context.Background(), bench.Options{URL: ts.URL, Model: "m", Rate: 10, Constant: true,
		ISL: workload.Fixed{N: 500}, OSL: workload.Fixed{N: 30}, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Failed != 0 || s.Requests != 20 {
		t.Fatalf("through the frontend: %+v", s)
	}
	// Every request was prefilled once (one token) and decoded on one of the
	// two decoders. A worker counts a request just after its last byte: wait.
	d := 0.0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		d = counter(t, dreg1, "vllm:request_success_total") + counter(t, dreg2, "vllm:request_success_total")
		if d == 20 && counter(t, preg, "vllm:request_success_total") == 20 {
			break
		}
	}
	if got := counter(t, preg, "vllm:request_success_total"); got != 20 {
		t.Errorf("prefill worker served %v requests, want 20", got)
	}
	if d != 20 || counter(t, dreg1, "vllm:request_success_total") == 0 || counter(t, dreg2, "vllm:request_success_total") == 0 {
		t.Errorf("decode workers served %v requests (want 20, spread over both)", d)
	}
	// The frontend records a request once its stream has ended, just after
	// the client has its last byte: wait for the last ones.
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, _ := http.Get(ts.URL + "/metrics")
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `gpuplane_frontend_requests_total{status="ok"} 20`) {
			break
		}
	}
	for _, want := range []string{`gpuplane_frontend_requests_total{status="ok"} 20`, "gpuplane_frontend_time_to_first_token_seconds_count 20",
		"gpuplane_frontend_input_sequence_tokens_sum 10000", "gpuplane_frontend_output_sequence_tokens_sum 600",
		"gpuplane_frontend_inter_token_latency_seconds_count"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("frontend metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(string(b))
	}
}

func TestNoWorkers(t *testing.T) {
	f := &Frontend{Agg: workers.Static{}}
	ts, _ := serve(t, f)
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "no agg workers") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if r, _ := http.Get(ts.URL + "/health"); r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("health %d with no workers", r.StatusCode)
	}
}

// A worker that refuses connections (shutting down) is skipped: the request
// goes to the next one and nothing is lost.
func TestRefusingWorkerIsSkipped(t *testing.T) {
	good, _ := worker(t, "agg")
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	f, ts, _ := frontendOn(t, deadURL, good)
	f.inflight[good].Add(1) // the dead worker looks least busy: it is tried first
	for range 3 {
		if code, b := complete(t, ts.URL); code != http.StatusOK {
			t.Fatalf("%d %s", code, b)
		}
	}
	if got := f.Workers()["agg"]; len(got) != 1 || got[0] != good {
		t.Errorf("workers after a refusal: %v", got)
	}
}

// dying is a worker that hangs up: before answering at all, or after
// streaming chunks tokens of an answer.
func dying(t *testing.T, chunks int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if chunks > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			for range chunks {
				io.WriteString(w, "data: {\"choices\":[{\"text\":\"a \"}]}\n\n")
			}
			w.(http.Flusher).Flush()
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// frontendOn serves an aggregated frontend over urls.
func frontendOn(t *testing.T, urls ...string) (*Frontend, *httptest.Server, *prometheus.Registry) {
	f := &Frontend{Agg: workers.Static(urls)}
	ts, reg := serve(t, f)
	return f, ts, reg
}

// A worker that drops the connection before its first byte costs nothing:
// the request goes to another worker.
func TestResetBeforeFirstByteIsRetried(t *testing.T) {
	good, _ := worker(t, "agg")
	f, ts, _ := frontendOn(t, dying(t, 0), good)
	f.inflight[good].Add(1) // the dying worker looks least busy: it is tried first
	if code, b := complete(t, ts.URL); code != http.StatusOK {
		t.Errorf("%d %s: a reset before the first byte must be retried on the other worker", code, b)
	}
}

// complete sends a short completion through the frontend.
func complete(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"hello","max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// A worker that dies mid-stream: the client sees an error event and no
// [DONE], the frontend counts an error, and bench counts a failure.
func TestStreamCutByADyingWorker(t *testing.T) {
	_, ts, reg := frontendOn(t, dying(t, 2))
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"m","prompt":"hello","max_tokens":30,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"error"`) || strings.Contains(string(b), "[DONE]") {
		t.Errorf("a cut stream must end with an error event and no [DONE]:\n%s", b)
	}
	s, _, err := bench.Run(context.Background(), bench.Options{URL: ts.URL, Model: "m", Rate: 5, Constant: true,
		ISL: workload.Fixed{N: 10}, OSL: workload.Fixed{N: 30}, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Failed != s.Requests || s.Requests == 0 {
		t.Errorf("bench counted %d of %d cut streams as failed", s.Failed, s.Requests)
	}
	if got := counter(t, reg, "gpuplane_frontend_requests_total"); got == 0 {
		t.Error("the frontend counted nothing")
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if mf.GetName() == "gpuplane_frontend_requests_total" && l.GetValue() == "ok" && m.GetCounter().GetValue() > 0 {
					t.Errorf("%v cut streams counted ok", m.GetCounter().GetValue())
				}
			}
		}
	}
}

// A worker killed under 100 users of load loses no request silently: each
// one succeeds on the other worker or fails visibly, and bench and the
// frontend count the same.
func TestWorkerKilledUnderLoad(t *testing.T) {
	good, _ := worker(t, "agg")
	doomed, _, kill := emulatetest.StartKillable(t, "agg")
	_, ts, reg := frontendOn(t, good, doomed)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		kill()
	}()
	s, recs, err := bench.Run(context.Background(), bench.Options{URL: ts.URL, Model: "m", Users: 100,
		ISL: workload.Fixed{N: 200}, OSL: workload.Fixed{N: 40}, Duration: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range recs {
		if r.Error != "" {
			failed++
		} else if r.OutputTokens != 40 {
			t.Errorf("a request counted as served has %d of 40 tokens", r.OutputTokens)
		}
	}
	// The frontend records a request once its stream has ended: wait for the last ones.
	var ok, bad float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ok, bad = 0, 0
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "gpuplane_frontend_requests_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "ok" {
					ok += m.GetCounter().GetValue()
				} else {
					bad += m.GetCounter().GetValue()
				}
			}
		}
		if int(ok+bad) >= len(recs) {
			break
		}
	}
	t.Logf("%d requests: %d failed visibly (bench), frontend ok %v, error %v", s.Requests, failed, ok, bad)
	if s.Requests < 100 || int(ok) != len(recs)-failed || int(bad) != failed {
		t.Errorf("bench: %d requests, %d failed; frontend: %v ok, %v errors", len(recs), failed, ok, bad)
	}
}

// A bad request through a disaggregated frontend is the client's fault
// and says what is wrong: the body's shape by the frontend, a field by
// the prefill worker's own answer, passed through as it wrote it.
func TestDisaggregatedBadRequests(t *testing.T) {
	p1, _ := worker(t, "prefill")
	d1, _ := worker(t, "decode")
	f := &Frontend{Prefill: workers.Static{p1}, Decode: workers.Static{d1}}
	ts, _ := serve(t, f)
	for _, tc := range []struct {
		body string
		want []string
	}{
		{`null`, []string{`"message":"prefill: request body: null where a JSON object is expected"`, `"type":"invalid_request_error"`}},
		{`[1,2]`, []string{`"message":"prefill: request body: a list where a mapping is expected"`, `"type":"invalid_request_error"`}},
		{`{"model":"m","prompt":"x",`, []string{`invalid JSON body`, `"type":"invalid_request_error"`}},
		{`{"model":"m","prompt":"x","temperature":9}`, []string{`"param":"temperature"`, `"type":"invalid_request_error"`}},
		{`{"model":"m","prompt":5}`, []string{`"param":"prompt"`}},
	} {
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", tc.body, resp.StatusCode, b)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: %s lacks %s", tc.body, b, w)
			}
		}
	}
}
