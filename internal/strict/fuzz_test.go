package strict

import "testing"

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
