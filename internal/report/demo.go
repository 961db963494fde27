package report

import (
	"fmt"
	"html/template"
	"io"

	"github.com/gpuplane/gpuplane/internal/demo"
)

var demoPage = withHead("demo", `{{template "head" .}}
<h2>Planner against static provisioning</h2>
<table><tr><th class="l">provisioning</th><th>SLO attainment</th><th>before the burst</th><th>after the reaction window</th><th>TTFT p99 (ms)</th><th>ITL p99 (ms)</th><th>GPU-hours</th></tr>
{{range .Runs}}<tr><td class="l">{{.Name}}</td><td>{{.Att}}</td><td>{{.Before}}</td><td>{{.After}}</td><td>{{.TTFT}}</td><td>{{.ITL}}</td><td>{{.GPUh}}</td></tr>
{{end}}</table>
<div class="charts">{{range .Charts}}<div>{{.}}</div>{{end}}</div>
<h2>Planner decisions</h2>
<table><tr><th>time (s)</th><th>observed req/s</th><th>predicted req/s</th><th>prefill</th><th>decode</th><th class="l">reason</th></tr>
{{range .Decisions}}<tr><td>{{printf "%.0f" .Time}}</td><td>{{printf "%.2f" .ObservedRate}}</td><td>{{printf "%.2f" .PredictedRate}}</td><td>{{.Prefill}}</td><td>{{.Decode}}</td><td class="l">{{.Reason}}</td></tr>
{{end}}</table></body></html>
`)

type demoRow struct{ Name, Att, Before, After, TTFT, ITL, GPUh string }

// WriteDemo writes the demo's HTML report: the comparison, the planned
// run's time series and every planner decision.
func WriteDemo(w io.Writer, title, subtitle string, res *demo.Result) error {
	var rows []demoRow
	for _, r := range []demo.Run{res.Planned, res.StaticPeak, res.StaticBase} {
		name := r.Name
		if r.Prefill > 0 {
			name = fmt.Sprintf("%s (%d prefill + %d decode)", r.Name, r.Prefill, r.Decode)
		}
		s := r.Summary
		rows = append(rows, demoRow{Name: name, Att: pctf(s.SLOAttainment), Before: pctf(r.Before), After: pctf(r.After),
			TTFT: fmt.Sprintf("%.0f", s.TTFTms.P99), ITL: fmt.Sprintf("%.1f", s.ITLms.P99), GPUh: fmt.Sprintf("%.2f", s.GPUHours)})
	}
	times, charts := SimCharts(res.Planned.Summary)
	var svgs []template.HTML
	for _, c := range charts {
		svgs = append(svgs, c.SVG(times))
	}
	return demoPage.Execute(w, map[string]any{"Title": title, "Subtitle": subtitle, "Runs": rows, "Charts": svgs,
		"Decisions": res.Planned.Decisions})
}

func pctf(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }
