package frontend

import (
	"encoding/json"
	"testing"
)

// FuzzPrefillBody: any body is refused with an error or becomes a JSON
// object asking for one unstreamed token, never a panic.
func FuzzPrefillBody(f *testing.F) {
	for _, s := range []string{`{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true}}`, `null`, `[1]`, `"x"`, `{`, ``, `{"max_tokens":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := prefillBody(body)
		if err != nil {
			return
		}
		var req map[string]any
		if err := json.Unmarshal(out, &req); err != nil || req == nil {
			t.Fatalf("prefill body %q from %q: %v", out, body, err)
		}
		if req["max_tokens"] != 1.0 || req["stream"] != false {
			t.Fatalf("prefill body %q asks for more than one unstreamed token", out)
		}
		if _, ok := req["stream_options"]; ok {
			t.Fatalf("prefill body %q keeps stream_options", out)
		}
	})
}
