package report

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/bench"
	"github.com/gpuplane/gpuplane/internal/configure"
)

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		max       float64
		n         int
		top, step float64
	}{
		{945, 5, 1000, 200}, {709, 4, 800, 200}, {0.97, 4, 1, 0.25}, {1500, 5, 1500, 500}, {33.7, 5, 40, 10}, {0, 4, 1, 0.25},
	} {
		top, step := niceTicks(tc.max, tc.n)
		if math.Abs(top-tc.top) > 1e-9 || math.Abs(step-tc.step) > 1e-9 {
			t.Errorf("niceTicks(%g, %d) = %g, %g; want %g, %g", tc.max, tc.n, top, step, tc.top, tc.step)
		}
	}
}

// Intervals without completions are gaps, not zeros, and the last time
// label stays inside the picture.
func TestChartGapsAndLabels(t *testing.T) {
	nan := math.NaN()
	c := Chart{Title: "ITL", Unit: "ms", Lines: []Line{{"p50", []float64{10, 11, nan, nan, 12, 13, nan, 9}}}}
	svg := string(c.SVG([]float64{0, 10, 20, 30, 40, 50, 60, 70}))
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d line segments, want 2 around the gap", n)
	}
	if !strings.Contains(svg, "<circle") {
		t.Error("the lone last interval is not drawn")
	}
	if strings.Contains(svg, ",196.0") { // y of value 0 on this chart: nothing is drawn at zero
		t.Error("a gap was drawn as zero")
	}
	if !strings.Contains(svg, `text-anchor="end">80s</text>`) {
		t.Errorf("the last time label should be anchored at its end:\n%s", svg)
	}
}

func TestParetoLegendAndTicks(t *testing.T) {
	res := &configure.Result{Curve: []configure.ParetoPoint{{Mode: "agg", TokensPerSPerGPU: 945, TokensPerSPerUser: 33.7, MeetsSLO: true},
		{Mode: "disagg", TokensPerSPerGPU: 473, TokensPerSPerUser: 60}}}
	svg := string(ParetoSVG(res))
	for _, want := range []string{"faded: misses the SLO", ">1000</text>", ">200</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("Pareto plot lacks %q", want)
		}
	}
	for _, odd := range []string{">945<", ">709<", ">473<"} {
		if strings.Contains(svg, odd) {
			t.Errorf("Pareto plot has an odd tick %s", odd)
		}
	}
}

// A bench page of a run that completed nothing says so instead of zero
// latencies, and a run without an SLO says it had none.
func TestBenchPageWithNothingCompleted(t *testing.T) {
	var b strings.Builder
	s := &bench.Summary{URL: "http://127.0.0.1:1", Model: "m", Load: "poisson", Duration: 2, Requests: 6, Failed: 6}
	if err := WriteBench(&b, "gpuplane bench", s); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"none completed", "no SLO given"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"0 / 0 / 0", "SLO TTFT 0 ms"} {
		if strings.Contains(page, bad) {
			t.Errorf("page shows %q", bad)
		}
	}
	b.Reset()
	s = &bench.Summary{URL: "u", Model: "m", Load: "poisson", Requests: 1, Succeeded: 1, SLOTTFTms: 500,
		TTFT: bench.Percentiles{P50: 120, P90: 130, P99: 140}}
	if err := WriteBench(&b, "t", s); err != nil {
		t.Fatal(err)
	}
	if page := b.String(); !strings.Contains(page, "120 / 130 / 140") || !strings.Contains(page, "SLO: TTFT &lt;= 500 ms") {
		t.Errorf("a completed run's page lacks its TTFT or SLO")
	}
}
