package emulate

import (
	"encoding/json"
	"testing"
)

// FuzzRequestBody: any body decodes and yields a prompt and a token count,
// or an error; never a panic, never a negative count.
func FuzzRequestBody(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"hello","max_tokens":5}`))
	f.Add([]byte(`{"model":"m","prompt":["a","b"]}`))
	f.Add([]byte(`{"model":"m","prompt":[1,2,3]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":9223372036854775807}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req completionRequest
		if json.Unmarshal(b, &req) != nil {
			return
		}
		text, ids, err := promptText(req.Prompt)
		if len(req.Messages) > 0 {
			ids = 0
			text, err = chatText(req.Messages)
		}
		if err != nil {
			return
		}
		isl := Tokens(text)
		if ids > 0 {
			isl = ids
		}
		n := 16
		if req.MaxTokens != nil && *req.MaxTokens >= 1 && *req.MaxTokens <= 1<<20 {
			n = *req.MaxTokens
		}
		if isl < 0 {
			t.Fatalf("%d prompt tokens", isl)
		}
		if osl := outputTokens(text, n, req.IgnoreEOS); osl < 1 || osl > n {
			t.Fatalf("%d output tokens for max %d", osl, n)
		}
	})
}
