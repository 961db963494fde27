package emulate

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/engine"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

func env(t testing.TB) estimate.Env {
	t.Helper()
	p, err := perf.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	return estimate.Env{Catalog: catalog.MustDefault(), Params: p}
}

func query() estimate.Query {
	q := estimate.Defaults()
	q.Model, q.GPU, q.Precision, q.Backend, q.TP = "Qwen/Qwen3-8B", "h100_sxm", "fp8", "vllm", 1
	return q
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestRealtimeTokens drives the engine on a fake clock: tokens come one per
// iteration after the first, requests finish with exactly their length, a
// prefill worker hands over after one token.
func TestRealtimeTokens(t *testing.T) {
	for _, role := range []string{"agg", "prefill", "decode"} {
		clk := &fakeClock{t: time.Unix(0, 0)}
		srv, err := New(env(t), Config{Query: query(), Role: role}, prometheus.NewRegistry(), clk.now)
		if err != nil {
			t.Fatal(err)
		}
		want := 50
		if role == "prefill" {
			want = 1
		}
		seen := streamOnFakeClock(t, srv, clk, 50, want)
		if len(seen) == 0 || seen[len(seen)-1] != want {
			t.Fatalf("%s: tokens %v, want to end at %d", role, seen, want)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] != seen[i-1]+1 {
				t.Errorf("%s: tokens jump %d -> %d: one per iteration expected", role, seen[i-1], seen[i])
			}
		}
	}
}

// streamOnFakeClock submits a 2000-token prompt for osl tokens and steps
// the clock a millisecond at a time until the stream reaches last,
// returning every token count it sent.
func streamOnFakeClock(t *testing.T, srv *Server, clk *fakeClock, osl, last int) []int {
	t.Helper()
	ch, err := srv.RT.Submit(2000, osl, "length")
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	for range 10000 {
		clk.add(time.Millisecond)
		srv.RT.advance()
		for drained := false; !drained; {
			select {
			case n, ok := <-ch:
				if ok {
					seen = append(seen, n)
				} else {
					drained = true
				}
			default:
				drained = true
			}
		}
		if len(seen) > 0 && seen[len(seen)-1] == last {
			break
		}
	}
	return seen
}

func serve(t *testing.T) (*httptest.Server, *Server) {
	t.Helper()
	reg := prometheus.NewRegistry()
	srv, err := New(env(t), Config{Query: query(), ServedName: "qwen3-8b", MaxModelLen: 8192}, reg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.RT.Run(ctx)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); cancel() })
	return ts, srv
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestOpenAIAPI(t *testing.T) {
	ts, _ := serve(t)
	resp, body := post(t, ts.URL+"/v1/completions", `{"model":"qwen3-8b","prompt":"`+strings.Repeat("abcd", 100)+`","max_tokens":20,"ignore_eos":true}`)
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || out.Usage.CompletionTokens != 20 || len(out.Choices[0].Text) != 80 || out.Choices[0].FinishReason != "length" {
		t.Errorf("completion %d: %s", resp.StatusCode, body)
	}
	if out.Usage.PromptTokens != 100 {
		t.Errorf("prompt tokens %d, want 100 (400 characters)", out.Usage.PromptTokens)
	}

	// Streaming chat: a role in the first delta, one chunk per iteration, usage, [DONE].
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"qwen3-8b","messages":[{"role":"user","content":"hello there"}],"max_tokens":8,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			events = append(events, strings.TrimPrefix(l, "data: "))
		}
	}
	resp.Body.Close()
	if len(events) < 4 || events[len(events)-1] != "[DONE]" || !strings.Contains(events[0], `"role":"assistant"`) ||
		!strings.Contains(events[len(events)-2], `"completion_tokens":8`) || !strings.Contains(events[len(events)-3], `"finish_reason":"length"`) {
		t.Errorf("stream events:\n%s", strings.Join(events, "\n"))
	}

	for _, tc := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/v1/completions", `{"model":`, 400, "invalid JSON"},
		{"/v1/completions", `{"model":"gpt-4","prompt":"x"}`, 404, "does not exist"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"` + strings.Repeat("x", 40000) + `","max_tokens":10}`, 400, "maximum context length is 8192 tokens"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","max_tokens":0}`, 400, "max_tokens must be at least 1"},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[]}`, 400, "messages: required"},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"x"},{"role":"robot","content":"y"}]}`, 400, `messages[1].role: \"robot\" is not a chat role`},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"content":"x"}]}`, 400, `messages[0].role: \"\" is not a chat role`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":["a","b"]}`, 400, "2 prompts"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","max_tokens":9223372036854775807}`, 400, "maximum context length"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x"} {"more":1}`, 400, "more than one JSON value"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","temperature":-5}`, 400, "temperature must be in [0, 2]"},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"x"}],"top_p":0}`, 400, "top_p"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","n":4}`, 400, "n must be 1"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","max_tokens":"5"}`, 400, `"message":"max_tokens: a string where a whole number is expected","param":"max_tokens"`},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"x"}],"stream":"yes"}`, 400, `"param":"stream"`},
		{"/v1/completions", `[1,2]`, 400, `"message":"request body: a list where a mapping is expected"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":[[1,2],[3]]}`, 400, "2 prompts"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":[1,-2]}`, 400, `"param":"prompt[1]"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":[[1.5]]}`, 400, `"param":"prompt[0][0]"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":[]}`, 400, `prompt: empty`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":[` + strings.Repeat("7,", 9000) + `7]}`, 400, "maximum context length is 8192 tokens"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","max_tokens":4,"min_tokens":5}`, 400, "min_tokens must be less than or equal to max_tokens=4"},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","min_tokens":-1}`, 400, `"param":"min_tokens"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","stop":123}`, 400, `"param":"stop"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","logprobs":5}`, 400, `logprobs: not emulated`},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":3}`, 400, `"param":"logprobs"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","echo":true}`, 400, `"param":"echo"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":"x","best_of":3}`, 400, `"param":"best_of"`},
		{"/v1/completions", `null`, 400, `"message":"request body: null where a JSON object is expected"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":null}`, 400, `"message":"prompt: required"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":""}`, 400, `"param":"prompt"`},
		{"/v1/completions", `{"model":"qwen3-8b","prompt":[""]}`, 400, `"param":"prompt[0]"`},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":[{"type":"text","text":"a"},null]}]}`, 400, `"param":"messages[0].content[1]"`},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, `"param":"messages[0].content[0].type"`},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`, 400, `"param":"messages[0].content[0].text"`},
		{"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":[{"text":"a"}]}]}`, 400, `"param":"messages[0].content[0].type"`},
	} {
		resp, body := post(t, ts.URL+tc.path, tc.body)
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) || !strings.Contains(body, `"error"`) {
			t.Errorf("%s %.40s: %d %s, want %d with %q", tc.path, tc.body, resp.StatusCode, body, tc.code, tc.want)
		}
	}

	if resp, err := http.Post(ts.URL+"/v1/completions", "text/plain", strings.NewReader(`{"model":"qwen3-8b","prompt":"x"}`)); err != nil || resp.StatusCode != 415 {
		t.Errorf("a text/plain body: %v %v, want 415", resp.StatusCode, err)
	}
	r, _ := http.Get(ts.URL + "/v1/models")
	b, _ := io.ReadAll(r.Body)
	if !strings.Contains(string(b), `"id":"qwen3-8b"`) || !strings.Contains(string(b), `"max_model_len":8192`) {
		t.Errorf("models: %s", b)
	}
	r, _ = http.Get(ts.URL + "/metrics")
	b, _ = io.ReadAll(r.Body)
	for _, want := range []string{`vllm:request_success_total{engine="0",finished_reason="length",model_name="qwen3-8b"} 2`,
		`vllm:generation_tokens_total{engine="0",model_name="qwen3-8b"} 28`, "vllm:time_to_first_token_seconds_bucket",
		"vllm:inter_token_latency_seconds_count", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:e2e_request_latency_seconds_sum"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Token IDs count as given; min_tokens holds the end back; a stop
	// string and logprobs off are accepted.
	if resp, body := post(t, ts.URL+"/v1/completions", `{"prompt":[[1,2,3,4,5,6,7]],"max_tokens":40,"min_tokens":40,"stop":["\n"],"logprobs":null}`); resp.StatusCode != 200 ||
		!strings.Contains(body, `"prompt_tokens":7`) || !strings.Contains(body, `"completion_tokens":40`) {
		t.Errorf("token IDs and min_tokens: %d %s", resp.StatusCode, body)
	}
	// A request without a model goes to the served one, as vLLM's does.
	if resp, body := post(t, ts.URL+"/v1/completions", `{"prompt":"x","max_tokens":2}`); resp.StatusCode != 200 || !strings.Contains(body, `"model":"qwen3-8b"`) {
		t.Errorf("no model named: %d %s", resp.StatusCode, body)
	}
}

func TestTokens(t *testing.T) {
	for in, want := range map[string]int{"": 1, "abc": 1, "abcd": 1, "abcde": 2, "héllo wörld": 3} {
		if got := Tokens(in); got != want {
			t.Errorf("Tokens(%q) = %d, want %d", in, got, want)
		}
	}
	if n := outputTokens("p", 100, true); n != 100 {
		t.Errorf("ignore_eos: %d", n)
	}
	a, b := outputTokens("same prompt", 100, false), outputTokens("same prompt", 100, false)
	if a != b || a < 50 || a > 100 {
		t.Errorf("eos length %d %d, want equal and in [50, 100]", a, b)
	}
}

// A client that goes away aborts its request: the engine frees the slot
// long before the answer would have ended, as vLLM does.
func TestClientGoneAbortsTheRequest(t *testing.T) {
	ts, srv := serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(
		`{"model":"qwen3-8b","prompt":"hello","max_tokens":4000,"ignore_eos":true,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	if _, err := resp.Body.Read(buf); err != nil { // the first tokens arrive
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second) // 4000 tokens would take far longer
	for time.Now().Before(deadline) {
		if running, waiting, _ := srv.RT.Stats(); running == 0 && waiting == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	running, waiting, _ := srv.RT.Stats()
	t.Errorf("the engine still holds the abandoned request: %d running, %d waiting", running, waiting)
}

type ttftRecorder struct {
	mu    sync.Mutex
	ttfts []time.Duration
}

func (r *ttftRecorder) FirstToken(_ int, ttft time.Duration) {
	r.mu.Lock()
	r.ttfts = append(r.ttfts, ttft)
	r.mu.Unlock()
}
func (r *ttftRecorder) Token(time.Duration)                      {}
func (r *ttftRecorder) Finished(int, int, time.Duration, string) {}

// The worker's API server holds each request for its frontend time, one at
// a time, before the engine sees it (as the simulator and the estimate
// charge it): a burst's later requests wait for the earlier ones there. A
// decode worker gets requests that passed an API server already.
func TestAPIServerTimeBeforeTheEngine(t *testing.T) {
	base, err := estimate.BaseConfig(env(t), query())
	if err != nil {
		t.Fatal(err)
	}
	base.TP, base.PP = 1, 1
	run := func(p *perf.Params, role engine.Role, n int) []time.Duration {
		w, err := perf.NewWorker(base, p)
		if err != nil {
			t.Fatal(err)
		}
		clk := &fakeClock{t: time.Unix(0, 0)}
		rec := &ttftRecorder{}
		rt, err := NewRealtime(w, role, clk.now, rec)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := rt.Submit(3000, 4, "length"); err != nil {
				t.Fatal(err)
			}
		}
		for range 20000 {
			clk.add(100 * time.Microsecond)
			rt.advance()
			rec.mu.Lock()
			done := len(rec.ttfts) == n
			rec.mu.Unlock()
			if done {
				break
			}
		}
		if len(rec.ttfts) != n {
			t.Fatalf("%d of %d first tokens", len(rec.ttfts), n)
		}
		return rec.ttfts
	}
	p := perf.MustDefaultParams().Clone()
	p.Backends[perf.VLLM].FrontendOverheadMs, p.Backends[perf.VLLM].FrontendPerTokenUs = 20, 0
	none := perf.MustDefaultParams().Clone()
	none.Backends[perf.VLLM].FrontendOverheadMs, none.Backends[perf.VLLM].FrontendPerTokenUs = 0, 0
	with, without := run(p, engine.Aggregated, 1), run(none, engine.Aggregated, 1)
	if d := with[0] - without[0]; d < 19*time.Millisecond || d > 21*time.Millisecond {
		t.Errorf("one request: TTFT %v with a 20 ms API server, %v without: want 20 ms more", with[0], without[0])
	}
	burst := run(p, engine.Aggregated, 4)
	if burst[3] < 80*time.Millisecond {
		t.Errorf("the 4th of a burst: TTFT %v, want at least 4 x 20 ms in the API server", burst[3])
	}
	dw, dn := run(p, engine.Decode, 1), run(none, engine.Decode, 1)
	if dw[0] != dn[0] {
		t.Errorf("decode worker: TTFT %v with an API-server time, %v without; want no charge", dw[0], dn[0])
	}
}

// A client that leaves while its request waits in the API server ends it
// there: its channel closes and the engine never sees it.
func TestAbortInTheAPIServer(t *testing.T) {
	base, err := estimate.BaseConfig(env(t), query())
	if err != nil {
		t.Fatal(err)
	}
	base.TP, base.PP = 1, 1
	p := perf.MustDefaultParams().Clone()
	p.Backends[perf.VLLM].FrontendOverheadMs = 50
	w, err := perf.NewWorker(base, p)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Unix(0, 0)}
	rt, err := NewRealtime(w, engine.Aggregated, clk.now, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := rt.Submit(100, 4, "length")
	second, _ := rt.Submit(100, 4, "length")
	rt.Abort(second)
	if _, open := <-second; open {
		t.Fatal("aborted request's channel still open")
	}
	clk.add(60 * time.Millisecond)
	rt.advance()
	if r, wt, _ := rt.Stats(); r+wt != 1 {
		t.Errorf("engine holds %d running + %d waiting after the first left the API server, want 1", r, wt)
	}
	_ = first
}

// A worker of attention-DP ranks spreads a burst over its ranks (each
// with its own API server), steps them together and streams every
// request to its end.
func TestAttentionDPWorker(t *testing.T) {
	q := query()
	q.Model, q.GPU, q.Precision, q.TP, q.EP, q.DP = "deepseek-ai/DeepSeek-R1", "b200_sxm", "fp4", 1, 4, 4
	clk := &fakeClock{t: time.Unix(0, 0)}
	srv, err := New(env(t), Config{Query: q}, prometheus.NewRegistry(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	rt := srv.RT
	var chans []<-chan int
	for range 8 {
		ch, err := rt.Submit(1000, 50, "length")
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	if len(rt.ranks) != 4 {
		t.Fatalf("%d engines, want the worker's 4 ranks", len(rt.ranks))
	}
	for k, e := range rt.ranks {
		if n := e.Running() + e.Waiting() + len(rt.inFront[k]); n != 2 {
			t.Errorf("rank %d holds %d of the 8 requests, want 2", k, n)
		}
	}
	last := make([]int, len(chans))
	for range 100000 {
		clk.add(time.Millisecond)
		rt.advance()
		for i, ch := range chans {
			for more := true; more; {
				select {
				case n, ok := <-ch:
					if ok {
						last[i] = n
					} else {
						more = false
					}
				default:
					more = false
				}
			}
		}
		if r, w, _ := rt.Stats(); r+w == 0 && len(rt.jobs) == 0 {
			break
		}
	}
	for i, n := range last {
		if n != 50 {
			t.Errorf("request %d ended at %d tokens, want 50", i, n)
		}
	}
	// In lockstep, equally loaded ranks run the same iterations.
	for k, e := range rt.ranks[1:] {
		if e.Iterations != rt.ranks[0].Iterations {
			t.Errorf("rank %d ran %d iterations, rank 0 %d", k+1, e.Iterations, rt.ranks[0].Iterations)
		}
	}
}

// A worker's own settings are checked as a request's are: nonsense is
// refused with the setting named, 0 keeps the default.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Query: query(), MaxModelLen: -5}, "max-model-len -5"},
		{Config{Query: query(), DefaultMaxTokens: -1}, "default-max-tokens -1"},
		{Config{Query: query(), MaxModelLen: 1 << 40}, "exceeds the KV cache"},
		{Config{Query: query(), Role: "both"}, `role: "both"`},
	} {
		if _, err := New(env(t), tc.cfg, prometheus.NewRegistry(), time.Now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	srv, err := New(env(t), Config{Query: query()}, prometheus.NewRegistry(), time.Now)
	if err != nil || srv.DefaultMaxTokens != 256 || srv.MaxModelLen < 1 {
		t.Errorf("defaults: %v, %+v", err, srv)
	}
}
