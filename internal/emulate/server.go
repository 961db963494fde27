package emulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuplane/gpuplane/internal/strict"
)

// Server is the OpenAI-compatible HTTP face of one emulated worker.
type Server struct {
	Model       string
	MaxModelLen int
	// DefaultMaxTokens applies to chat requests without max_tokens (completions default to 16, as OpenAI's).
	DefaultMaxTokens int
	RT               *Realtime
	Registry         *prometheus.Registry
	Clock            Clock
	ids              atomic.Int64
}

// Handler serves /v1/completions, /v1/chat/completions, /v1/models, /health and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "not_found_error", "", fmt.Sprintf("%s %s: no such endpoint; the emulator serves POST /v1/completions, POST /v1/chat/completions, GET /v1/models, /health, /metrics", r.Method, r.URL.Path))
	})
	return mux
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type completionRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []message       `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`
	// MinTokens holds back the end-of-sequence token, as vLLM's does.
	MinTokens *int `json:"min_tokens"`
	// Stop must be a string or strings; the emulated text is a fixed
	// phrase, so they are checked, not matched.
	Stop json.RawMessage `json:"stop"`
	// What the emulator cannot give is refused, not left out of the answer.
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	Echo        bool            `json:"echo"`
	BestOf      *int            `json:"best_of"`
	// Sampling fields: they do not change the emulated timing, but out of
	// range they are refused as vLLM refuses them.
	Temperature      *float64 `json:"temperature"`
	TopP             *float64 `json:"top_p"`
	TopK             *int     `json:"top_k"`
	N                *int     `json:"n"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
}

// checkSampling names the first sampling field out of vLLM's range.
func (r *completionRequest) checkSampling() (field, msg string) {
	in := func(v *float64, lo, hi float64) bool { return v == nil || *v >= lo && *v <= hi }
	switch {
	case !in(r.Temperature, 0, 2):
		return "temperature", fmt.Sprintf("temperature must be in [0, 2], got %g.", *r.Temperature)
	case r.TopP != nil && !(*r.TopP > 0 && *r.TopP <= 1):
		return "top_p", fmt.Sprintf("top_p must be in (0, 1], got %g.", *r.TopP)
	case r.TopK != nil && (*r.TopK < -1 || *r.TopK == 0):
		return "top_k", fmt.Sprintf("top_k must be -1 (disable) or at least 1, got %d.", *r.TopK)
	case r.N != nil && *r.N != 1:
		return "n", fmt.Sprintf("n must be 1 on this emulated worker, got %d.", *r.N)
	case !in(r.PresencePenalty, -2, 2):
		return "presence_penalty", fmt.Sprintf("presence_penalty must be in [-2, 2], got %g.", *r.PresencePenalty)
	case !in(r.FrequencyPenalty, -2, 2):
		return "frequency_penalty", fmt.Sprintf("frequency_penalty must be in [-2, 2], got %g.", *r.FrequencyPenalty)
	case r.MinTokens != nil && *r.MinTokens < 0:
		return "min_tokens", fmt.Sprintf("min_tokens must be >= 0, got %d.", *r.MinTokens)
	case !stopStrings(r.Stop):
		return "stop", "stop: want a string or an array of strings."
	case len(r.Logprobs) > 0 && !bytes.Equal(r.Logprobs, []byte("null")) && !bytes.Equal(r.Logprobs, []byte("false")):
		return "logprobs", "logprobs: not emulated; this worker answers with text, usage and timing only. Leave logprobs out."
	case r.TopLogprobs != nil && *r.TopLogprobs != 0:
		return "top_logprobs", "top_logprobs: not emulated; this worker answers with text, usage and timing only. Leave top_logprobs out."
	case r.Echo:
		return "echo", "echo: not emulated; this worker does not return the prompt. Leave echo out."
	case r.BestOf != nil && *r.BestOf != 1:
		return "best_of", fmt.Sprintf("best_of must be 1 on this emulated worker, got %d.", *r.BestOf)
	}
	return "", ""
}

// stopStrings says whether raw is absent, null, a string or strings.
func stopStrings(raw json.RawMessage) bool {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return true
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return true
	}
	var many []string
	return json.Unmarshal(raw, &many) == nil
}

// apiError writes OpenAI's error body.
func apiError(w http.ResponseWriter, code int, typ, param, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	body := map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nullable(param), "code": code}}
	_ = json.NewEncoder(w).Encode(body)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.Model, "object": "model", "created": s.Clock().Unix(), "owned_by": "gpuplane", "max_model_len": s.MaxModelLen}}})
}

// promptText reads a completion prompt: a string, an array of one string,
// or token IDs (then also their count).
func promptText(raw json.RawMessage) (string, int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", 0, errors.New("prompt: required")
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return "", 0, errors.New("prompt: empty; give at least one token of text")
		}
		return one, 0, nil
	}
	// Token IDs (one prompt, or a batch of one) are what benchmark clients
	// that tokenize for themselves send; they count as given.
	if ids, err := tokenIDs(raw, "prompt"); ids > 0 || err != nil {
		return string(raw), ids, err
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err != nil {
		return "", 0, errors.New("prompt: want a string, an array of one string, or token IDs")
	}
	if len(batch) != 1 {
		return "", 0, fmt.Errorf("prompt: %d prompts in one request; the emulator takes one, send one request per prompt", len(batch))
	}
	if ids, err := tokenIDs(batch[0], "prompt[0]"); ids > 0 || err != nil {
		return string(batch[0]), ids, err
	}
	var text string
	if err := json.Unmarshal(batch[0], &text); err != nil {
		return "", 0, errors.New("prompt[0]: want a string or token IDs")
	}
	if text == "" {
		return "", 0, errors.New("prompt[0]: empty; give at least one token of text")
	}
	return text, 0, nil
}

// tokenIDs counts a prompt given as token IDs: 0 and no error when raw is
// not an array of numbers.
func tokenIDs(raw json.RawMessage, field string) (int, error) {
	var ids []json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&ids) != nil || len(ids) == 0 {
		if string(raw) == "[]" {
			return 0, fmt.Errorf("%s: empty; give at least one token", field)
		}
		return 0, nil
	}
	for i, id := range ids {
		if n, err := id.Int64(); err != nil || n < 0 {
			return 0, fmt.Errorf("%s[%d]: %s is not a token ID (a whole number >= 0)", field, i, id)
		}
	}
	return len(ids), nil
}

// chatRoles are the message roles of OpenAI's chat API ("function" is
// its deprecated form of "tool"); a server that serves chat refuses others.
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// partText reads one part of a message's content: the emulated model reads
// text parts only, and a part it cannot read is refused, not skipped.
// The error starts with the field below the part (".type", ".text").
func partText(part any) (string, error) {
	p, ok := part.(map[string]any)
	if !ok {
		return "", errors.New(": want a part object such as {\"type\": \"text\", \"text\": \"...\"}")
	}
	switch typ, _ := p["type"].(string); typ {
	case "text":
		t, ok := p["text"].(string)
		if !ok {
			return "", errors.New(".text: want a string")
		}
		return t, nil
	case "":
		return "", errors.New(".type: required; want \"text\"")
	default:
		return "", fmt.Errorf(".type: %q is not served: this emulated worker reads text parts only", typ)
	}
}

func chatText(msgs []message) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("messages: required, at least one message")
	}
	var b strings.Builder
	for i, m := range msgs {
		if !chatRoles[m.Role] {
			return "", fmt.Errorf("messages[%d].role: %q is not a chat role; use system, developer, user, assistant or tool", i, m.Role)
		}
		switch c := m.Content.(type) {
		case string:
			b.WriteString(c)
		case []any:
			for j, part := range c {
				t, err := partText(part)
				if err != nil {
					return "", fmt.Errorf("messages[%d].content[%d]%s", i, j, err)
				}
				b.WriteString(t)
			}
		default:
			return "", fmt.Errorf("messages[%d].content: want a string or an array of parts", i)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	var body *completionRequest // nil after a JSON null
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		apiError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "", "Content-Type "+ct+" is not application/json")
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
	if err := dec.Decode(&body); err != nil {
		if path, what, ok := strict.TypeMismatch(err); ok {
			if path == "" {
				apiError(w, http.StatusBadRequest, "invalid_request_error", "", "request body: "+what)
			} else {
				apiError(w, http.StatusBadRequest, "invalid_request_error", path, path+": "+what)
			}
			return
		}
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid JSON body: "+err.Error())
		return
	}
	if dec.More() {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid JSON body: more than one JSON value")
		return
	}
	if body == nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "request body: null where a JSON object is expected")
		return
	}
	req := *body
	if field, msg := req.checkSampling(); field != "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", field, msg)
		return
	}
	// vLLM answers a request that names no model with the one it serves.
	if req.Model != "" && req.Model != s.Model {
		apiError(w, http.StatusNotFound, "invalid_request_error", "model", fmt.Sprintf("The model `%s` does not exist; this server serves `%s`.", req.Model, s.Model))
		return
	}
	var text string
	var ids int
	var err error
	if chat {
		text, err = chatText(req.Messages)
	} else {
		text, ids, err = promptText(req.Prompt)
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", strings.SplitN(err.Error(), ":", 2)[0], err.Error())
		return
	}
	maxTokens := 16
	if chat {
		maxTokens = s.DefaultMaxTokens
	}
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	}
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if maxTokens < 1 {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens", fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTokens))
		return
	}
	isl := Tokens(text)
	if ids > 0 {
		isl = ids
	}
	if req.MinTokens != nil && *req.MinTokens > maxTokens {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "min_tokens", fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", maxTokens, *req.MinTokens))
		return
	}
	if maxTokens > s.MaxModelLen || isl > s.MaxModelLen || isl+maxTokens > s.MaxModelLen { // each alone first: the sum may overflow
		apiError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.MaxModelLen, isl+maxTokens, isl, maxTokens))
		return
	}
	osl := outputTokens(text, maxTokens, req.IgnoreEOS)
	if req.MinTokens != nil {
		osl = max(osl, *req.MinTokens)
	}
	reason := "length"
	if osl < maxTokens {
		reason = "stop"
	}
	tokens, err := s.RT.Submit(isl, osl, reason)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	// A client that goes away aborts its request, freeing the engine's slot.
	stop := context.AfterFunc(r.Context(), func() { s.RT.Abort(tokens) })
	defer stop()
	id := fmt.Sprintf("cmpl-%d", s.ids.Add(1))
	if chat {
		id = "chat" + id
	}
	if !req.Stream {
		n := 0
		for n = range tokens {
		}
		s.writeFull(w, id, chat, isl, n, reason)
		return
	}
	s.stream(w, r, id, chat, isl, tokens, reason, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
}

func (s *Server) writeFull(w http.ResponseWriter, id string, chat bool, isl, n int, reason string) {
	text := outputText(0, n)
	usage := map[string]int{"prompt_tokens": isl, "completion_tokens": n, "total_tokens": isl + n}
	body := map[string]any{"id": id, "created": s.Clock().Unix(), "model": s.Model, "usage": usage}
	if chat {
		body["object"] = "chat.completion"
		body["choices"] = []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": text}, "finish_reason": reason}}
	} else {
		body["object"] = "text_completion"
		body["choices"] = []map[string]any{{"index": 0, "text": text, "finish_reason": reason}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func outputText(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(tokenText(i))
	}
	return b.String()
}

// stream writes server-sent events as the engine produces tokens: one
// chunk per iteration with the tokens it made, the last with the finish
// reason, usage if asked, then [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, chat bool, isl int, tokens <-chan int, reason string, usage bool) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	created := s.Clock().Unix()
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	send := func(choice map[string]any, u map[string]int) {
		body := map[string]any{"id": id, "object": object, "created": created, "model": s.Model, "choices": []map[string]any{}}
		if choice != nil {
			body["choices"] = []map[string]any{choice}
		}
		if u != nil {
			body["usage"] = u
		}
		b, _ := json.Marshal(body)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	sent, first := 0, true
	for n := range tokens {
		if r.Context().Err() != nil {
			continue // the client left; drain so the engine's accounting stays whole
		}
		piece := outputText(sent, n)
		sent = n
		if chat {
			delta := map[string]string{"content": piece}
			if first {
				delta["role"] = "assistant"
			}
			send(map[string]any{"index": 0, "delta": delta, "finish_reason": nil}, nil)
		} else {
			send(map[string]any{"index": 0, "text": piece, "finish_reason": nil}, nil)
		}
		first = false
	}
	if r.Context().Err() != nil {
		return
	}
	if chat {
		send(map[string]any{"index": 0, "delta": map[string]string{}, "finish_reason": reason}, nil)
	} else {
		send(map[string]any{"index": 0, "text": "", "finish_reason": reason}, nil)
	}
	if usage {
		send(nil, map[string]int{"prompt_tokens": isl, "completion_tokens": sent, "total_tokens": isl + sent})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
