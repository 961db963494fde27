package workload

import (
	"bytes"
	"testing"
)

// FuzzReplay: every trace format reads or fails line by line; sizes and
// times that come out are sane; never a panic.
func FuzzReplay(f *testing.F) {
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"), uint8(0))
	f.Add([]byte(`{"timestamp": 0, "input_length": 100, "output_length": 10}`+"\n"), uint8(1))
	f.Add([]byte(`{"at": 0.5, "isl": 100, "osl": 10}`+"\n"), uint8(2))
	formats := []string{FormatAzure, FormatMooncake, FormatGpuplane}
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		r, err := NewReplay(bytes.NewReader(b), formats[int(which)%len(formats)], ReplayOptions{})
		if err != nil {
			return
		}
		for range 1000 {
			a, ok, err := r.Next()
			if err != nil || !ok {
				return
			}
			if a.ISL < 1 || a.OSL < 1 || a.At < 0 {
				t.Fatalf("arrival %+v", a)
			}
		}
	})
}
