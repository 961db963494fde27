package strict

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

type fuzzDoc struct {
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Spec  struct{ A []int } `json:"spec"`
	Tags  map[string]string `json:"tags,omitempty"`
}

// FuzzUnmarshal: any bytes decode or fail with an error, never a panic.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{"name: x\ncount: 3\nspec: {a: [1, 2]}\n", "name: x\n---\nname: y\n", "spec: {b: 1}", "- 1\n- 2", "count: .nan", "spec: {a: [1, -.inf]}", "name: [1]\ncount: x", "{", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d fuzzDoc
		_ = Unmarshal(b, &d)
	})
}

// FuzzWholeNumbers: the rewrite never panics, and where it changes an
// object every value reads as the same JSON value as before.
func FuzzWholeNumbers(f *testing.F) {
	for _, s := range []string{`{"isl":1000.0,"tp":4}`, `{"a":1e3,"b":-0.0,"c":1.5}`, `{"x":9007199254740993.0}`, `{"n":NaN}`, `[1.0]`, `{"a":{"b":2.0}}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := WholeNumbers(b)
		_ = NonJSONNumber(b)
		if bytes.Equal(out, b) {
			return
		}
		var before, after map[string]any
		if err := json.Unmarshal(b, &before); err != nil {
			t.Fatalf("rewrote %q, which is not a JSON object: %v", b, err)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("rewrite of %q is not JSON: %q: %v", b, out, err)
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("rewrite changed values: %q -> %q", b, out)
		}
	})
}

// FuzzDuplicateKey: any bytes are judged without a panic, and a document
// whose objects hold each key once (b as a Go decoder reads it, written
// back) is never reported.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"isl":1,"isl":2}`, `{"a":[{"b":1,"b":2}]}`, `[{"k":1},{"k":1}]`, `{"a":{"a":{"a":1}}}`, `{"a":1,`, `[[[`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = DuplicateKey(b)
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		once, err := json.Marshal(v)
		if err != nil {
			return
		}
		if err := DuplicateKey(once); err != nil {
			t.Fatalf("%q (from %q): reported %v", once, b, err)
		}
	})
}
