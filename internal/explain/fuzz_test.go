package explain

import (
	"bytes"
	"context"
	"testing"
)

// FuzzLoad: a dump loads or fails, and explaining any claim of what loads
// returns an answer or an error; never a panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: d}\nspec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.gpuplane.io, count: -2}}]}}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Load(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, c := range s.Claims {
			_, _ = ExplainClaim(context.Background(), s, c.Namespace, c.Name)
		}
	})
}
