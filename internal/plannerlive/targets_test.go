package plannerlive

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

type workerStub struct {
	success atomic.Int64
	srv     *httptest.Server
}

func newStub(t *testing.T) *workerStub {
	w := &workerStub{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		n := w.success.Load()
		fmt.Fprintf(rw, "vllm:request_success_total{model_name=\"m\"} %d\nvllm:prompt_tokens_total{model_name=\"m\"} %d\n"+
			"vllm:generation_tokens_total{model_name=\"m\"} %d\nvllm:num_requests_running{model_name=\"m\"} 0\n", n, 1000*n, 100*n)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

type targets struct{ urls atomic.Pointer[[]string] }

func (ts *targets) Workers(context.Context) ([]string, error) { return *ts.urls.Load(), nil }

// TestScrapeFollowsWorkers: workers that appear count from zero and gone
// ones stop counting, so scaling does not make counters "go back".
func TestScrapeFollowsWorkers(t *testing.T) {
	a, b, d := newStub(t), newStub(t), newStub(t)
	pre, dec := &targets{}, &targets{}
	pre.urls.Store(&[]string{a.srv.URL})
	dec.urls.Store(&[]string{d.srv.URL})
	s := &ScrapeSource{PrefillTargets: pre, DecodeTargets: dec}
	t0 := time.Unix(1000, 0)
	a.success.Store(50)
	if o := s.Observe(context.Background(), t0); !o.Stale {
		t.Fatal("first scrape not stale")
	}
	// 10 s later: a did 20 more, b appeared (scaled up) having done 5.
	a.success.Store(70)
	b.success.Store(5)
	pre.urls.Store(&[]string{a.srv.URL, b.srv.URL})
	o := s.Observe(context.Background(), t0.Add(10*time.Second))
	if o.Stale || o.Requests != 25 || o.MeanISL != 1000 {
		t.Fatalf("scale up: %+v", o)
	}
	// a is gone (scaled down); b did 7 more.
	b.success.Store(12)
	pre.urls.Store(&[]string{b.srv.URL})
	o = s.Observe(context.Background(), t0.Add(20*time.Second))
	if o.Stale || o.Requests != 7 {
		t.Fatalf("scale down: %+v", o)
	}
	// b restarted: its counters start again from zero.
	b.success.Store(3)
	o = s.Observe(context.Background(), t0.Add(30*time.Second))
	if o.Stale || o.Requests != 3 {
		t.Fatalf("restart: %+v", o)
	}
}
