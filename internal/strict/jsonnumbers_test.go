package strict

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWholeNumbers(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"isl":1000.0,"tp":4}`, `{"isl":1000,"tp":4}`},
		{`{"isl":1e3}`, `{"isl":1000}`},
		{`{"isl":1E3,"x":-2.0}`, `{"isl":1000,"x":-2}`},
		{`{"isl":1000}`, `{"isl":1000}`},     // nothing to do: unchanged bytes
		{`{"isl":1000.5}`, `{"isl":1000.5}`}, // a fraction stays for the decoder to refuse
		{`{"isl":1e300}`, `{"isl":1e300}`},   // beyond exact integers
		{`{"isl":9007199254740993.0}`, `{"isl":9007199254740993.0}`},
		{`{"name":"4.0"}`, `{"name":"4.0"}`},   // a string is not a number
		{`{"a":{"b":4.0}}`, `{"a":{"b":4.0}}`}, // top level only
		{`[4.0]`, `[4.0]`},
		{`null`, `null`},
		{`{"isl":`, `{"isl":`},
	} {
		if got := string(WholeNumbers([]byte(c.in))); got != c.want {
			t.Errorf("WholeNumbers(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// The rewrite lets a whole float decode into an integer field, and only a
// whole one.
func TestWholeNumbersDecodeIntoInts(t *testing.T) {
	var q struct{ ISL, TP int }
	if err := json.Unmarshal(WholeNumbers([]byte(`{"ISL":4000.0,"TP":2e0}`)), &q); err != nil || q.ISL != 4000 || q.TP != 2 {
		t.Fatalf("got %+v, %v", q, err)
	}
	if err := json.Unmarshal(WholeNumbers([]byte(`{"ISL":4000.25}`)), &q); err == nil {
		t.Fatal("4000.25 decoded into an integer field")
	}
}

func TestNonJSONNumber(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"isl":1000,"tp":NaN}`, "tp: NaN is not a JSON number"},
		{`{"ttft" : -Infinity}`, "ttft: -Infinity is not a JSON number"},
		{`{"a\"b":Infinity}`, `a\"b: Infinity is not a JSON number`},
		{`{"tp":4}`, ""},
		{`{"name":"NaN"}`, ""},
	} {
		err := NonJSONNumber([]byte(c.in))
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("NonJSONNumber(%s) = %v, want %q", c.in, err, c.want)
		}
	}
}
