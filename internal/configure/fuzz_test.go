package configure

import (
	"os"
	"testing"
)

// FuzzParseFile: ServingRequest and DGDR files decode into a request that
// validates, or fail with an error; never a panic.
func FuzzParseFile(f *testing.F) {
	for _, p := range []string{"../../examples/serving-request.yaml", "../../examples/dgdr.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: ServingRequest\nspec: {model: x, sla: {ttft: -1}}\n"))
	f.Add([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: ServingRequest\nspec: {model: x, specTokens: 3, specAccept: 9, sla: {itl: 30}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rf, err := ParseFile(b)
		if err != nil {
			return
		}
		_ = rf.Request.Validate()
	})
}

// FuzzParsePool: pool files decode or fail.
func FuzzParsePool(f *testing.F) {
	if b, err := os.ReadFile("../../examples/pool.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("pool:\n- {device: h100_sxm, count: -1}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pool, err := ParsePool(b)
		if err == nil && len(pool) == 0 {
			t.Fatal("an empty pool was accepted")
		}
	})
}
