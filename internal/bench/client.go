// Package bench is gpuplane's load generator for OpenAI-compatible servers
// (vLLM, SGLang, the emulator): open-loop arrivals at a rate (Poisson or
// constant), trace replay or N closed-loop users, each request streamed so
// that time to first token and inter-token latency are measured as a user
// sees them.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Record is one request as the client saw it.
type Record struct {
	// Start is when it was sent, seconds from the run's start.
	Start float64 `json:"start"`
	ISL   int     `json:"isl"`
	OSL   int     `json:"osl"`
	// PromptTokens and OutputTokens are what the server reported (usage), or counted.
	PromptTokens int     `json:"promptTokens"`
	OutputTokens int     `json:"outputTokens"`
	TTFT         float64 `json:"ttft"`
	E2E          float64 `json:"e2e"`
	// ITLs are the gaps between streamed chunks after the first, seconds.
	ITLs  []float64 `json:"-"`
	Error string    `json:"error,omitempty"`
}

// TPOT is the mean time per output token after the first.
func (r Record) TPOT() float64 {
	if r.OutputTokens < 2 {
		return 0
	}
	return (r.E2E - r.TTFT) / float64(r.OutputTokens-1)
}

// client sends streaming completions.
type client struct {
	http  *http.Client
	url   string
	model string
	chat  bool
}

// prompt makes a text of n tokens by the emulator's rule (four characters a
// token) from random letters, so servers with prefix caching cannot reuse it.
func prompt(n int, rng *rand.Rand) string {
	b := make([]byte, 0, n*4)
	for i := 0; i < n; i++ {
		for j := 0; j < 3; j++ {
			b = append(b, byte('a'+rng.IntN(26)))
		}
		b = append(b, ' ')
	}
	return string(b)
}

type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	// Error is an OpenAI-style error event inside a stream.
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// do sends one request and measures it; t0 is the run's start.
func (c *client) do(ctx context.Context, t0 time.Time, text string, isl, osl int) Record {
	start := time.Now()
	rec := Record{Start: start.Sub(t0).Seconds(), ISL: isl, OSL: osl}
	body := map[string]any{"model": c.model, "max_tokens": osl, "ignore_eos": true, "stream": true,
		"stream_options": map[string]bool{"include_usage": true}}
	path := "/v1/completions"
	if c.chat {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": text}}
	} else {
		body["prompt"] = text
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.url, "/")+path, bytes.NewReader(b))
	if err != nil {
		rec.Error = err.Error()
		return rec
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		rec.Error = err.Error()
		return rec
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		rec.Error = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		return rec
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var last time.Time
	chunks, done := 0, false
	for sc.Scan() {
		// An SSE field is "data:" and an optional space; lines may end in CRLF.
		data, ok := strings.CutPrefix(strings.TrimSuffix(sc.Text(), "\r"), "data:")
		if !ok {
			continue
		}
		data = strings.TrimPrefix(data, " ")
		if data == "[DONE]" {
			done = true
			break
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			rec.Error = "bad stream chunk: " + err.Error()
			return rec
		}
		if ch.Error != nil {
			rec.Error = "stream error event: " + ch.Error.Message
			return rec
		}
		if ch.Usage != nil {
			rec.PromptTokens, rec.OutputTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
		text := ""
		for _, c := range ch.Choices {
			text += c.Text + c.Delta.Content
		}
		if text == "" {
			continue
		}
		now := time.Now()
		if chunks == 0 {
			rec.TTFT = now.Sub(start).Seconds()
		} else {
			rec.ITLs = append(rec.ITLs, now.Sub(last).Seconds())
		}
		last = now
		chunks++
	}
	if err := sc.Err(); err != nil {
		rec.Error = "stream: " + err.Error()
		return rec
	}
	if !done {
		// A stream cut short (a worker died) is a failure, however many tokens came.
		rec.Error = fmt.Sprintf("stream ended after %d chunks without [DONE]", chunks)
		return rec
	}
	rec.E2E = time.Since(start).Seconds()
	if rec.OutputTokens == 0 {
		rec.OutputTokens = chunks
	}
	if chunks == 0 {
		rec.Error = "no tokens in the stream"
	}
	return rec
}
