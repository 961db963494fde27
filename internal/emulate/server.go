package emulate

import (
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
	}
	return "", ""
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

// promptText reads a completion prompt: a string or an array of one string.
func promptText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("prompt: required")
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return "", errors.New("prompt: empty; give at least one token of text")
		}
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return "", errors.New("prompt: want a string or an array of one string")
	}
	if len(many) != 1 {
		return "", fmt.Errorf("prompt: %d prompts in one request; the emulator takes one, send one request per prompt", len(many))
	}
	if many[0] == "" {
		return "", errors.New("prompt[0]: empty; give at least one token of text")
	}
	return many[0], nil
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
	if req.Model != s.Model {
		apiError(w, http.StatusNotFound, "invalid_request_error", "model", fmt.Sprintf("The model `%s` does not exist; this server serves `%s`.", req.Model, s.Model))
		return
	}
	var text string
	var err error
	if chat {
		text, err = chatText(req.Messages)
	} else {
		text, err = promptText(req.Prompt)
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
	if maxTokens > s.MaxModelLen || isl > s.MaxModelLen || isl+maxTokens > s.MaxModelLen { // each alone first: the sum may overflow
		apiError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.MaxModelLen, isl+maxTokens, isl, maxTokens))
		return
	}
	osl := outputTokens(text, maxTokens, req.IgnoreEOS)
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
