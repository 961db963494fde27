package plugin

import "testing"

// FuzzDecodeConfig: opaque claim parameters decode strictly or fail.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"gpu.gpuplane.io/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}`))
	f.Add([]byte(`{"apiVersion":"gpu.gpuplane.io/v1alpha1","kind":"GpuConfig","bogus":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeConfig(b)
	})
}
