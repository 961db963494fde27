package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The client reads the server-sent events every engine writes, however
// its lines are spelled, and fails a request whose stream is not one.
func TestStreamShapes(t *testing.T) {
	tok := func(s string) string { return `{"choices":[{"index":0,"text":"` + s + `"}]}` }
	for _, tc := range []struct {
		name, body string
		tokens     int
		err        string
	}{
		{"plain", "data: " + tok("a") + "\n\ndata: " + tok("b") + "\n\ndata: [DONE]\n\n", 2, ""},
		{"no space after data:", "data:" + tok("a") + "\n\ndata:[DONE]\n\n", 1, ""},
		{"CRLF lines", "data: " + tok("a") + "\r\n\r\ndata: " + tok("b") + "\r\n\r\ndata: [DONE]\r\n\r\n", 2, ""},
		{"comments and other fields", ": keep-alive\n\nevent: message\ndata: " + tok("a") + "\n\ndata: [DONE]\n\n", 1, ""},
		{"chat deltas and usage", `data: {"choices":[{"delta":{"content":"x"}}]}` + "\n\n" + `data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":9}}` + "\n\ndata: [DONE]\n\n", 9, ""},
		{"cut short", "data: " + tok("a") + "\n\n", 0, "without [DONE]"},
		{"error event", "data: " + tok("a") + "\n\n" + `data: {"error":{"message":"worker died"}}` + "\n\n", 0, "worker died"},
		{"not JSON", "data: {oops\n\ndata: [DONE]\n\n", 0, "bad stream chunk"},
		{"no tokens", "data: [DONE]\n\n", 0, "no tokens"},
	} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(tc.body))
		}))
		c := &client{http: &http.Client{}, url: ts.URL, model: "m"}
		r := c.do(context.Background(), time.Now(), "x", 1, 2)
		ts.Close()
		switch {
		case tc.err == "" && (r.Error != "" || r.OutputTokens != tc.tokens):
			t.Errorf("%s: %+v, want %d tokens", tc.name, r, tc.tokens)
		case tc.err != "" && !strings.Contains(r.Error, tc.err):
			t.Errorf("%s: error %q, want %q", tc.name, r.Error, tc.err)
		}
	}
}

// Answers shorter than asked are counted: every request sets ignore_eos,
// so a server that stops early does not honour it.
func TestShortAnswersCounted(t *testing.T) {
	recs := []Record{
		{Start: 0, OSL: 20, OutputTokens: 20, TTFT: 0.1, E2E: 0.5},
		{Start: 0.5, OSL: 20, OutputTokens: 3, TTFT: 0.1, E2E: 0.2},
		{Start: 1, OSL: 20, Error: "boom"},
	}
	s := summarize(recs, newGapSample(16, 1), 2*time.Second, Options{})
	if s.ShortAnswers != 1 || s.Succeeded != 2 {
		t.Errorf("short answers %d of %d succeeded, want 1 of 2", s.ShortAnswers, s.Succeeded)
	}
}
