package perf

import "testing"

// FuzzParseParams: a parameter file loads with every value in range or is refused.
func FuzzParseParams(f *testing.F) {
	def, _ := MustDefaultParams().Marshal()
	f.Add(def)
	f.Add([]byte("version: 1\n"))
	f.Add([]byte("version: 1\nbackends: {vllm: {stepOverheadMs: 1e300}}\n"))
	f.Add([]byte("version: 1\nbackends: {sglang: {moeLayerUsByArch: {volta: 5, hopper: -1}}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseParams(b, "fuzz")
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed params fail validation: %v", err)
		}
	})
}
