package strict

import (
	"encoding/json"
	"strings"
	"testing"
)

type valuesDoc struct {
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Small int8              `json:"small"`
	Seed  uint64            `json:"seed"`
	Rate  float64           `json:"rate"`
	On    bool              `json:"enabled"`
	Spec  struct{ A []int } `json:"spec"`
	Dist  struct{ Median float64 }
	Tags  map[string]string `json:"tags,omitempty"`
}

// A value of the wrong kind, or one JSON cannot hold, is named by its path
// in the document and what the field takes.
func TestValueErrorsNameThePath(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"count: .nan", "count: .nan (line 1) is not a finite number"},
		{"name: x\nrate: -.inf\n", "rate: -.inf (line 2) is not a finite number"},
		{"spec: {a: [1, .inf]}", "spec.a[1]: .inf (line 1) is not a finite number"},
		{"name: .NaN", "name: .NaN (line 1) is not a finite number; give a number (or quote it, if it is text)"},
		{".nan", "the document: .nan (line 1) is not a finite number"},
		{"name: [1]", "name: a list where a string is expected"},
		{"name: {a: 1}", "name: a mapping where a string is expected"},
		{"count: 1.5", "count: 1.5 where a whole number is expected"},
		{"small: 300", "small: 300 where a whole number (-128 to 127) is expected"},
		{"seed: -1", "seed: -1 where a whole number (0 or more) is expected"},
		{"count: x", "count: a string where a whole number"},
		{"rate: fast", "rate: a string where a number is expected"},
		{"enabled: 3", "enabled: a number where true or false is expected"},
		{"tags: [a]", "tags: a list where a mapping is expected"},
		{"spec: {a: 1}", "spec.a: a number where a list is expected"},
		{"dist: {median: x}", "dist.median: a string where a number is expected"},
	} {
		var d valuesDoc
		err := Unmarshal([]byte(c.doc), &d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
	var j valuesDoc
	if err := NameTypeError(json.Unmarshal([]byte(`{"name": true}`), &j)); err == nil || err.Error() != "name: true or false where a string is expected" {
		t.Errorf("a JSON boolean for a string: %v", err)
	}
	var d valuesDoc
	if err := Unmarshal([]byte("name: '.nan'\nrate: 1e300\ncount: 3\n"), &d); err != nil || d.Name != ".nan" || d.Count != 3 {
		t.Errorf("a quoted .nan and finite numbers decode: %v %+v", err, d)
	}
}
