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
	b := MeanDecodeBatch(4, 1000, 200)
	if b.DecodeSeqs != 4 || b.Sampled != 4 || b.DecodeCtx != 4*1100 || b.PrefillTokens != 0 {
		t.Errorf("mean decode batch %+v", b)
	}
}
