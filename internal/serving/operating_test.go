package serving

import "testing"

// Little's law over a result: 2 requests/s that each decode 99 gaps of
// 20 ms hold 3.96 sequences decoding, 1.98 on each of two engines.
func TestMeanDecoding(t *testing.T) {
	r := &Result{RequestsPerS: 2, TPOTms: 20}
	for _, tc := range []struct{ osl, engines, want int }{
		{100, 1, 4}, {100, 2, 2}, {100, 0, 4}, {1, 1, 1}, {0, 3, 1}, {100, 100, 1},
	} {
		if got := r.MeanDecoding(tc.osl, tc.engines); got != tc.want {
			t.Errorf("osl %d over %d engines: %d sequences, want %d", tc.osl, tc.engines, got, tc.want)
		}
	}
	if ctx := (Workload{ISL: 1000, OSL: 200}).DecodeContext(); ctx != 1100 {
		t.Errorf("decode context of 1000/200 tokens: %g, want 1100", ctx)
	}
}
