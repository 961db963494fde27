package slo

import (
	"math"
	"strings"
	"testing"
)

func TestCheckPercentile(t *testing.T) {
	for _, p := range []float64{0, 50, 90, 99, 99.9} {
		if err := CheckPercentile("x", p); err != nil {
			t.Errorf("%g: %v", p, err)
		}
	}
	for _, p := range []float64{-1, 10, 49.9, 100, math.NaN(), math.Inf(1)} {
		if err := CheckPercentile("sla.x", p); err == nil || !strings.Contains(err.Error(), "sla.x") {
			t.Errorf("%g: got %v", p, err)
		}
	}
}

func TestStat(t *testing.T) {
	for p, want := range map[float64]string{0: "mean", 90: "p90", 99.9: "p99.9"} {
		if got := Stat(p); got != want {
			t.Errorf("Stat(%g) = %q, want %q", p, got, want)
		}
	}
}

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		p, ms float64
		want  string
	}{{0, 500, "mean <= 500 ms"}, {90, 30, "p90 <= 30 ms"}, {99, 0, "p99 (no target)"}, {0, 0, "mean (no target)"}} {
		if got := Target(tc.p, tc.ms); got != tc.want {
			t.Errorf("Target(%g, %g) = %q, want %q", tc.p, tc.ms, got, tc.want)
		}
	}
}
