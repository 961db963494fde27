// Package report renders simulation results as one self-contained HTML
// page: inline SVG charts and tables, no scripts, nothing fetched.
package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuplane/gpuplane/internal/sim"
)

// Line is one series of a chart.
type Line struct {
	Name   string
	Values []float64
}

// Chart is a time-series chart over the summary's intervals.
type Chart struct {
	Title, Unit string
	Lines       []Line
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"}

// niceTicks picks an axis top and tick step of 1, 2, 2.5 or 5 times a
// power of ten, so about n ticks read as round numbers up to top >= max.
func niceTicks(max float64, n int) (top, step float64) {
	if !(max > 0) || math.IsInf(max, 0) {
		return 1, 1.0 / float64(n)
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return math.Ceil(max/step-1e-9) * step, step
}

// label prints a tick value without float noise.
func label(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }

// axisLabels writes the tick values of both axes: under the x axis at
// baseline (suffix after each, "s" for seconds; the last one anchored at
// its end when it is near right, so that it stays inside the picture) and
// left of the y axis at yAxisX.
func axisLabels(sb *strings.Builder, topX, stepX, topY, stepY float64, x, y func(float64) float64, baseline, yAxisX, right float64, suffix string) {
	for v := 0.0; v <= topX+stepX/2; v += stepX {
		anchor := "middle"
		if x(v) > right-12 {
			anchor = "end"
		}
		fmt.Fprintf(sb, `<text x="%.1f" y="%g" font-size="10" text-anchor="%s">%s%s</text>`, x(v), baseline, anchor, label(v), suffix)
	}
	for v := 0.0; v <= topY+stepY/2; v += stepY {
		fmt.Fprintf(sb, `<text x="%g" y="%.1f" font-size="10" text-anchor="end">%s</text>`, yAxisX, y(v)+3, label(v))
	}
}

// SVG draws the chart against times (seconds). A NaN value is an interval
// with nothing to show (no completions): the line breaks there.
func (c Chart) SVG(times []float64) template.HTML {
	const w, h, l, r, t, b = 640.0, 220.0, 56.0, 16.0, 24.0, 30.0
	maxY := 0.0
	for _, ln := range c.Lines {
		for _, v := range ln.Values {
			if !math.IsNaN(v) {
				maxY = math.Max(maxY, v)
			}
		}
	}
	topY, stepY := niceTicks(maxY, 4)
	maxX := 1.0
	if len(times) > 0 {
		maxX = math.Max(times[len(times)-1], 1)
	}
	topX, stepX := niceTicks(maxX, 5)
	x := func(v float64) float64 { return l + (w-l-r)*v/topX }
	y := func(v float64) float64 { return h - b - (h-t-b)*v/topY }
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" role="img" aria-label="%s">`, w, h, template.HTMLEscapeString(c.Title))
	fmt.Fprintf(&sb, `<text x="%g" y="16" font-size="13" font-weight="bold">%s</text>`, l, template.HTMLEscapeString(c.Title))
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#888"/><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#888"/>`,
		l, h-b, w-r, h-b, l, t, l, h-b)
	axisLabels(&sb, topX, stepX, topY, stepY, x, y, h-b+14, l-4, w-r, "s")
	fmt.Fprintf(&sb, `<text x="4" y="%g" font-size="10">%s</text>`, t+8, template.HTMLEscapeString(c.Unit))
	for i, ln := range c.Lines {
		col := palette[i%len(palette)]
		var seg [][2]float64
		flush := func() {
			switch len(seg) {
			case 0:
			case 1: // a lone interval between gaps is a dot
				fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="1.5" fill="%s"/>`, seg[0][0], seg[0][1], col)
			default:
				pts := make([]string, len(seg))
				for k, p := range seg {
					pts[k] = fmt.Sprintf("%.1f,%.1f", p[0], p[1])
				}
				fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, col, strings.Join(pts, " "))
			}
			seg = seg[:0]
		}
		for j, v := range ln.Values {
			if j >= len(times) {
				break
			}
			if math.IsNaN(v) {
				flush()
				continue
			}
			seg = append(seg, [2]float64{x(times[j]), y(v)})
		}
		flush()
		fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="11" fill="%s">%s</text>`, w-r-150, t+14*float64(i+1), col, template.HTMLEscapeString(ln.Name))
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// SimCharts builds the standard charts of a simulation.
func SimCharts(s *sim.Summary) ([]float64, []Chart) {
	n := len(s.Series)
	times := make([]float64, n)
	col := func(f func(p sim.Point) float64) []float64 {
		out := make([]float64, n)
		for i, p := range s.Series {
			out[i] = f(p)
		}
		return out
	}
	for i, p := range s.Series {
		times[i] = p.Start
	}
	// Latencies and attainment exist only for intervals where requests
	// finished: the others are gaps, not zeros.
	done := func(f func(p sim.Point) float64) func(p sim.Point) float64 {
		return func(p sim.Point) float64 {
			if p.Completions == 0 {
				return math.NaN()
			}
			return f(p)
		}
	}
	itl := func(f func(p sim.Point) float64) func(p sim.Point) float64 {
		return func(p sim.Point) float64 {
			if p.Completions == 0 || p.ITLMeanms == 0 {
				return math.NaN()
			}
			return f(p)
		}
	}
	interval := 1.0
	if n > 1 {
		interval = s.Series[1].Start - s.Series[0].Start
	}
	var pools []string
	if n > 0 {
		for k := range s.Series[0].Workers {
			pools = append(pools, k)
		}
		sort.Strings(pools)
	}
	var workers []Line
	for _, name := range pools {
		workers = append(workers, Line{Name: name, Values: col(func(p sim.Point) float64 { return float64(p.Workers[name]) })})
	}
	return times, []Chart{
		{Title: "Arrivals", Unit: "req/s", Lines: []Line{{"arrivals", col(func(p sim.Point) float64 { return float64(p.Arrivals) / interval })}}},
		{Title: "Workers per pool", Unit: "workers", Lines: workers},
		{Title: "Queue depth", Unit: "requests", Lines: []Line{{"waiting", col(func(p sim.Point) float64 { return float64(p.QueueDepth) })}}},
		{Title: "TTFT", Unit: "ms", Lines: []Line{{"p50", col(done(func(p sim.Point) float64 { return p.TTFTms.P50 }))}, {"p99", col(done(func(p sim.Point) float64 { return p.TTFTms.P99 }))}}},
		{Title: "ITL", Unit: "ms", Lines: []Line{{"p50", col(itl(func(p sim.Point) float64 { return p.ITLms.P50 }))}, {"p99", col(itl(func(p sim.Point) float64 { return p.ITLms.P99 }))}}},
		{Title: "KV-cache use", Unit: "fraction", Lines: []Line{{"mean over workers", col(func(p sim.Point) float64 { return p.KVUse })}}},
		{Title: "SLO attainment of completions", Unit: "fraction", Lines: []Line{{"attainment", col(done(func(p sim.Point) float64 { return p.Attainment }))}}},
	}
}

// head is every report's document head, style and title.
var head = template.Must(template.New("head").Parse(`{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;max-width:1400px}table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td.l,th.l{text-align:left}th{background:#f4f4f4}tr.miss td{color:#999}
.charts{display:flex;flex-wrap:wrap;gap:12px}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Subtitle}}</p>
{{end}}`))

// withHead parses a report page that starts with {{template "head" .}}.
func withHead(name, body string) *template.Template {
	return template.Must(template.Must(head.Clone()).New(name).Parse(body))
}

var page = withHead("page", `{{template "head" .}}<table><tr>{{range .Keys}}<th>{{.}}</th>{{end}}</tr><tr>{{range .Values}}<td>{{.}}</td>{{end}}</tr></table>
<div class="charts">{{range .Charts}}<div>{{.}}</div>{{end}}</div></body></html>
`)

// WriteSim writes the HTML report of a simulation.
func WriteSim(w io.Writer, title, subtitle string, s *sim.Summary) error {
	times, charts := SimCharts(s)
	var svgs []template.HTML
	for _, c := range charts {
		svgs = append(svgs, c.SVG(times))
	}
	keys := []string{"requests", "completed", "unfinished", "SLO attainment", "goodput (req/s)", "TTFT p50/p90/p99 (ms)", "ITL p50/p90/p99 (ms)", "GPU-hours"}
	vals := []string{fmt.Sprint(s.Requests), fmt.Sprint(s.Completed), fmt.Sprint(s.Unfinished), fmt.Sprintf("%.1f%%", 100*s.SLOAttainment),
		fmt.Sprintf("%.2f", s.GoodputRPS), fmt.Sprintf("%.0f / %.0f / %.0f", s.TTFTms.P50, s.TTFTms.P90, s.TTFTms.P99),
		fmt.Sprintf("%.1f / %.1f / %.1f", s.ITLms.P50, s.ITLms.P90, s.ITLms.P99), fmt.Sprintf("%.2f", s.GPUHours)}
	return page.Execute(w, map[string]any{"Title": title, "Subtitle": subtitle, "Keys": keys, "Values": vals, "Charts": svgs})
}
