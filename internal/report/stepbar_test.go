package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/estimate"
)

var rectWidth = regexp.MustCompile(`<rect x="[0-9.]+" y="0" width="([0-9.]+)"`)

// barWidth sums the widths of a bar's parts.
func barWidth(t *testing.T, svg string) float64 {
	t.Helper()
	sum := 0.0
	for _, m := range rectWidth.FindAllStringSubmatch(svg, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// A bar is as long as its step against the longest, its parts in the
// same order and colours in every row, each with its time in a tooltip.
func TestStepBarScalesAndNamesParts(t *testing.T) {
	long := &estimate.StepShare{Sequences: 64, Ms: 30, PartsMs: map[string]float64{"attention": 20, "dense_gemm": 6, "overheads": 4}}
	short := &estimate.StepShare{Sequences: 8, Ms: 10, PartsMs: map[string]float64{"dense_gemm": 7, "attention": 3}}
	a, b := string(stepBar(long, 30)), string(stepBar(short, 30))
	if w := barWidth(t, a); math.Abs(w-stepBarWidth) > 0.05 {
		t.Errorf("the longest step spans %g px, want %g", w, stepBarWidth)
	}
	if w := barWidth(t, b); math.Abs(w-stepBarWidth/3) > 0.05 {
		t.Errorf("a step a third as long spans %g px, want %g", w, stepBarWidth/3)
	}
	for _, want := range []string{"<title>attention 20.00 ms (67%)</title>", "<title>overheads 4.00 ms (13%)</title>", ">30.0 ms</text>", `aria-label="decode step 30.0 ms at 64 sequences"`} {
		if !strings.Contains(a, want) {
			t.Errorf("bar lacks %q:\n%s", want, a)
		}
	}
	// dense_gemm precedes attention in perf.StepParts, in both rows alike.
	for _, svg := range []string{a, b} {
		if strings.Index(svg, "dense_gemm") > strings.Index(svg, "attention") {
			t.Errorf("parts out of order:\n%s", svg)
		}
	}
	for _, tc := range []struct {
		st      *estimate.StepShare
		longest float64
	}{{nil, 30}, {&estimate.StepShare{}, 30}, {long, 10}, {long, math.NaN()}} {
		if got := stepBar(tc.st, tc.longest); got != "" {
			t.Errorf("stepBar(%+v, %g) = %q, want nothing", tc.st, tc.longest, got)
		}
	}
}

func TestConfigureReportHasStepBars(t *testing.T) {
	st := &estimate.StepShare{Sequences: 32, Ms: 25, PartsMs: map[string]float64{"attention": 25}}
	res := &configure.Result{Model: "m", Candidates: []configure.Config{{Rank: 1, Mode: "agg", Agg: &configure.Pool{Device: "h100_sxm", TP: 1, Workers: 1}, DecodeStep: st}}}
	var sb strings.Builder
	if err := WriteConfigure(&sb, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<th class=\"l\">decode step</th>", "<title>attention 25.00 ms (100%)</title>", "moe_prompt_floor</span>"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
