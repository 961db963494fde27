package scenario

import (
	"os"
	"testing"
)

// FuzzParse: scenarios decode and are checked for bounded work, or fail;
// never a panic.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../../examples/burst.yaml", "../../examples/planner-burst.yaml", "../../examples/disagg-trace.yaml", "../../examples/attention-dp.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("durationSeconds: 1e12\nworkload: {kind: poisson, rate: {constant: 1e9}}\n"))
	f.Add([]byte("workload: {kind: poisson, rate: 2, isl: 300, osl: -1}\n"))
	f.Add([]byte("backend: trtllm\nkvAdmission: [whole]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b, t.TempDir())
		if err != nil {
			return
		}
		_ = s.SLO.validate()
		_ = s.checkLimits()
	})
}
