package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/slo"
)

// ParetoSVG plots every measured operating point (tokens/s per user
// against tokens/s per GPU), the Pareto front of those inside the TTFT
// target, the ITL target as a vertical line and the chosen configuration.
func ParetoSVG(res *configure.Result) template.HTML {
	const w, h, l, r, t, b = 760.0, 420.0, 64.0, 16.0, 28.0, 44.0
	maxX, maxY := 1.0, 1.0
	for _, p := range res.Curve {
		maxX, maxY = math.Max(maxX, p.TokensPerSPerUser), math.Max(maxY, p.TokensPerSPerGPU)
	}
	topX, stepX := niceTicks(maxX*1.02, 5)
	topY, stepY := niceTicks(maxY*1.02, 5)
	maxX, maxY = topX, topY
	x := func(v float64) float64 { return l + (w-l-r)*v/maxX }
	y := func(v float64) float64 { return h - b - (h-t-b)*v/maxY }
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" role="img" aria-label="Pareto front">`, w, h)
	sb.WriteString(`<text x="64" y="18" font-size="13" font-weight="bold">Throughput per GPU against interactivity</text>`)
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#888"/><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#888"/>`,
		l, h-b, w-r, h-b, l, t, l, h-b)
	axisLabels(&sb, topX, stepX, topY, stepY, x, y, h-b+14, l-4, w-r, "")
	fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="11" text-anchor="middle">output tokens/s per user</text>`, (l+w-r)/2, h-8)
	fmt.Fprintf(&sb, `<text x="14" y="%g" font-size="11" transform="rotate(-90 14 %g)" text-anchor="middle">output tokens/s per GPU</text>`, (t+h-b)/2, (t+h-b)/2)
	if res.SLA.ITLms > 0 {
		xs := x(1e3 / res.SLA.ITLms)
		fmt.Fprintf(&sb, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#d62728" stroke-dasharray="4 3"/>`, xs, t, xs, h-b)
		fmt.Fprintf(&sb, `<text x="%.1f" y="%g" font-size="10" fill="#d62728">ITL %g ms</text>`, xs+4, t+10, res.SLA.ITLms)
	}
	colour := map[string]string{"agg": "#1f77b4", "disagg": "#2ca02c"}
	for _, p := range res.Curve {
		op := "0.35"
		if p.MeetsSLO {
			op = "0.8"
		}
		fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s" fill-opacity="%s"><title>%s: %.0f tok/s/GPU, %.1f tok/s/user, TTFT %.0f ms</title></circle>`,
			x(p.TokensPerSPerUser), y(p.TokensPerSPerGPU), colour[p.Mode], op, template.HTMLEscapeString(p.Label), p.TokensPerSPerGPU, p.TokensPerSPerUser, p.TTFTms)
	}
	var pts []string
	for _, p := range res.Pareto {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.TokensPerSPerUser), y(p.TokensPerSPerGPU)))
	}
	fmt.Fprintf(&sb, `<polyline fill="none" stroke="#ff7f0e" stroke-width="2" points="%s"/>`, strings.Join(pts, " "))
	if bst := res.Best; bst != nil && bst.MeetsSLO {
		fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#000" stroke-width="2"><title>chosen: %s</title></circle>`,
			x(bst.TokensPerSPerUser), y(bst.TokensPerSPerGPU), template.HTMLEscapeString(configure.Describe(*bst)))
	}
	legend := []struct{ colour, opacity, text string }{{"#1f77b4", "0.8", "aggregated, meets the SLO"}, {"#2ca02c", "0.8", "disaggregated, meets the SLO"},
		{"#888", "0.35", "faded: misses the SLO"}, {"#ff7f0e", "1", "Pareto front (TTFT met)"}, {"#000", "1", "chosen"}}
	for i, lg := range legend {
		fmt.Fprintf(&sb, `<rect x="%g" y="%g" width="10" height="10" fill="%s" fill-opacity="%s"/><text x="%g" y="%g" font-size="11">%s</text>`,
			w-r-190, t+16*float64(i), lg.colour, lg.opacity, w-r-175, t+9+16*float64(i), lg.text)
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

var configurePage = withHead("configure", `{{template "head" .}}
{{if .Miss}}<p><strong>{{.Miss}}</strong></p>{{end}}
<div>{{.Plot}}</div>
<h2>Why</h2><ul>{{range .Explain}}<li>{{.}}</li>{{end}}</ul>
<h2>Candidates</h2>
<p>Decode step: one step of the agg or decode pool at its mean decoding batch per engine, by part: {{.Legend}}</p>
<table><tr><th>#</th><th class="l">deployment</th><th>GPUs</th><th>users</th><th>TTFT (ms)</th><th>ITL (ms)</th><th>tok/s</th><th>tok/s/GPU</th><th>tok/s/user</th>{{if .Priced}}<th>cost/h</th>{{end}}<th>SLO</th><th class="l">decode step</th><th class="l">binding limit</th></tr>
{{range .Rows}}<tr{{if not .MeetsSLO}} class="miss"{{end}}><td>{{.Rank}}</td><td class="l">{{.Name}}</td><td>{{.GPUs}}</td><td>{{.Users}}</td><td>{{.TTFT}}</td><td>{{.ITL}}</td><td>{{.Tok}}</td><td>{{.PerGPU}}</td><td>{{.PerUser}}</td>{{if $.Priced}}<td>{{.Cost}}</td>{{end}}<td>{{.SLO}}</td><td class="l">{{.Step}}</td><td class="l">{{.Binding}}</td></tr>
{{end}}</table>
<h2>Pareto front</h2>
<table><tr><th class="l">operating point</th><th>tok/s/GPU</th><th>tok/s/user</th><th>TTFT (ms)</th><th>ITL (ms)</th></tr>
{{range .Front}}<tr><td class="l">{{.Label}}</td><td>{{printf "%.0f" .TokensPerSPerGPU}}</td><td>{{printf "%.1f" .TokensPerSPerUser}}</td><td>{{printf "%.0f" .TTFTms}}</td><td>{{printf "%.1f" .ITLms}}</td></tr>
{{end}}</table>
<p>{{.Count}}</p></body></html>
`)

type configureRow struct {
	Rank                                                          int
	Name, GPUs, Users, TTFT, ITL, Tok, PerGPU, PerUser, Cost, SLO string
	Binding                                                       string
	Step                                                          template.HTML
	MeetsSLO                                                      bool
}

// WriteConfigure writes the HTML report of a configuration search.
func WriteConfigure(w io.Writer, res *configure.Result) error {
	var rows []configureRow
	priced := false
	longest := 0.0
	for _, c := range res.Candidates {
		if c.DecodeStep != nil {
			longest = math.Max(longest, c.DecodeStep.Ms)
		}
	}
	for _, c := range res.Candidates {
		slo := "met"
		if !c.MeetsSLO {
			slo = "missed"
		}
		priced = priced || c.CostPerHour > 0
		rows = append(rows, configureRow{Rank: c.Rank, Name: configure.Describe(c), GPUs: fmt.Sprintf("%.4g", c.GPUs),
			Users: fmt.Sprint(c.Concurrency), TTFT: fmt.Sprintf("%.0f", c.TTFTms), ITL: fmt.Sprintf("%.1f", c.ITLms),
			Tok: fmt.Sprintf("%.0f", c.TokensPerS), PerGPU: fmt.Sprintf("%.0f", c.TokensPerSPerGPU),
			PerUser: fmt.Sprintf("%.1f", c.TokensPerSPerUser), Cost: fmt.Sprintf("%.2f", c.CostPerHour), SLO: slo,
			Binding: c.Binding, Step: stepBar(c.DecodeStep, longest), MeetsSLO: c.MeetsSLO})
	}
	miss := ""
	if res.Unreachable != nil {
		miss = res.Unreachable.Message
	}
	sla := fmt.Sprintf("TTFT %s, ITL %s", slo.Target(res.SLA.TTFTPercentile, res.SLA.TTFTms), slo.Target(res.SLA.ITLPercentile, res.SLA.ITLms))
	spec := ""
	if res.SpecTokens > 0 {
		spec = fmt.Sprintf(", drafting %d (%g gained a step)", res.SpecTokens, res.SpecAccept)
	}
	if res.SLA.E2Ems > 0 {
		sla += fmt.Sprintf(", E2E <= %g ms", res.SLA.E2Ems)
	}
	return configurePage.Execute(w, map[string]any{
		"Title":    "gpuplane configure: " + res.Model,
		"Subtitle": fmt.Sprintf("%s, %s%s, ISL %d / OSL %d, %s, pick %s", res.Backend, res.Precision, spec, res.ISL, res.OSL, sla, res.Pick),
		"Miss":     miss, "Plot": ParetoSVG(res), "Explain": res.Explain, "Rows": rows, "Priced": priced, "Front": res.Pareto, "Legend": stepLegend(),
		"Count": fmt.Sprintf("%d candidate deployments evaluated from %d engine simulations.", res.CandidatesEvaluated, res.Simulations),
	})
}
