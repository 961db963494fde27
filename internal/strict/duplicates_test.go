package strict

import (
	"strings"
	"testing"
)

// A key given twice is named by its path wherever it sits; keys that
// repeat across different objects, and text that is not JSON, are not
// reported.
func TestDuplicateKey(t *testing.T) {
	cases := []struct {
		in, want string // want "": no report
	}{
		{`{"isl":1000,"osl":100}`, ""},
		{`{"isl":1000,"isl":5}`, "isl: given twice"},
		{`{"a":{"x":1},"b":{"x":2}}`, ""},
		{`{"a":{"x":1,"y":[1,2],"x":2}}`, "a.x: given twice"},
		{`{"a":[{"k":1},{"k":2,"k":3}]}`, "a[1].k: given twice"},
		{`[{"k":1},{"k":1}]`, ""},
		{`[{"k":1},{"j":[],"k":1,"j":{}}]`, "[1].j: given twice"},
		{`{"a":"isl","isl":"a"}`, ""},
		{`{"a":1,"b":{},"c":[],"a":2}`, "a: given twice"},
		{`{"a\u0062":1,"ab":2}`, "ab: given twice"},
		{`{"a":1,`, ""},
		{`not json`, ""},
		{``, ""},
	}
	for _, tc := range cases {
		err := DuplicateKey([]byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: got %v, want no report", tc.in, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}
