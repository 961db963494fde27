package fleet

import (
	"os"
	"testing"
)

// FuzzParse: fleet files decode within their bounds or fail.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../../examples/fleet.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec: {nodePools: [{name: a, profile: hgx-h100, count: 10000000}]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fl, err := Parse(b)
		if err != nil {
			return
		}
		n := 0
		for _, p := range fl.Spec.NodePools {
			n += p.Count
		}
		if n < 1 || n > MaxNodes {
			t.Fatalf("a fleet of %d nodes was accepted", n)
		}
	})
}
