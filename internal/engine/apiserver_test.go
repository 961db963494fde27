package engine

import (
	"math"
	"testing"
)

// A request spends its parallel part on its own, then queues for the
// serial part: three requests at once leave one serial time apart after
// the parallel time, whatever the split, and all of it in parallel lets
// them leave together.
func TestAPIServerAdmit(t *testing.T) {
	for _, tc := range []struct {
		par, ser float64
		want     []float64
	}{
		{0, 0.03, []float64{0.03, 0.06, 0.09}},
		{0.01, 0.02, []float64{0.03, 0.05, 0.07}},
		{0.03, 0, []float64{0.03, 0.03, 0.03}},
	} {
		var f APIServer
		for i, w := range tc.want {
			if got := f.Admit(0, tc.par, tc.ser); math.Abs(got-w) > 1e-12 {
				t.Errorf("parallel %g, serial %g: request %d leaves at %g, want %g", tc.par, tc.ser, i, got, w)
			}
		}
		// A request after the server went idle waits only its own time.
		if got := f.Admit(1, tc.par, tc.ser); math.Abs(got-(1+tc.par+tc.ser)) > 1e-12 {
			t.Errorf("parallel %g, serial %g: a lone request leaves at %g, want %g", tc.par, tc.ser, got, 1+tc.par+tc.ser)
		}
	}
}
