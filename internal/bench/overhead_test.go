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
