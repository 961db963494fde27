package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkClientOverhead is bench's own cost per request: one streamed
// completion of 100 tokens from a server that answers at once, so the time
// is the client's (and loopback HTTP's), not a model's.
func BenchmarkClientOverhead(b *testing.B) {
	var body []byte
	for i := range 100 {
		body = fmt.Appendf(body, "data: {\"choices\":[{\"index\":0,\"text\":\"tok%d\",\"finish_reason\":null}]}\n\n", i)
	}
	body = append(body, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":100}}\n\ndata: [DONE]\n\n"...)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer ts.Close()
	c := &client{http: &http.Client{}, url: ts.URL, model: "m"}
	text := prompt(100, rand.New(rand.NewPCG(1, 2)))
	t0 := time.Now()
	for b.Loop() {
		r := c.do(context.Background(), t0, text, 100, 100)
		if r.Error != "" || r.OutputTokens != 100 {
			b.Fatalf("%+v", r)
		}
	}
}

// BenchmarkGapSample is the cost of keeping one request's 100 gaps in the
// bounded sample, past its size (each gap may replace a kept one);
// BenchmarkGapAppend is the unbounded append it replaced, the baseline.
func BenchmarkGapSample(b *testing.B) {
	g := newGapSample(1<<16, 1)
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(i) * 1e-3
	}
	for range 1 << 12 {
		g.add(xs) // fill the sample first
	}
	for b.Loop() {
		g.add(xs)
	}
}

func BenchmarkGapAppend(b *testing.B) {
	xs := make([]float64, 100)
	var all []float64
	for b.Loop() {
		all = append(all, xs...)
		if len(all) > 1<<24 {
			all = all[:0]
		}
	}
}
