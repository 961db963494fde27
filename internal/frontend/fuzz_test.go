package frontend

import (
	"encoding/json"
	"strings"
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

// The prefill request keeps the client's numbers as written: a seed past
// 2^53 read as a float would reach the worker as another seed.
func TestPrefillBodyKeepsNumbers(t *testing.T) {
	out, err := prefillBody([]byte(`{"prompt":[128000,9906],"seed":9223372036854775807,"temperature":0.25,"max_tokens":300}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"seed":9223372036854775807`, `"prompt":[128000,9906]`, `"temperature":0.25`, `"max_tokens":1`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("prefill body %s lacks %s", out, want)
		}
	}
	for _, bad := range []string{`{"a":1} {"b":2}`, `{"a":`} {
		if _, err := prefillBody([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
