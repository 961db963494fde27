package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// partColours colours perf.StepParts in their order, the same in every
// row, so that rows compare part by part.
var partColours = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}

func partColour(i int) string { return partColours[i%len(partColours)] }

// stepBarWidth is the pixels of the longest step in a table.
const stepBarWidth = 160.0

// stepBar draws a decode step as a bar of its parts, in perf.StepParts
// order. Its length is the step's time against longest (the longest step
// in the table), so that the candidates' steps compare at a glance; each
// part's tooltip gives its time and share.
func stepBar(st *estimate.StepShare, longest float64) template.HTML {
	if st == nil || st.Ms <= 0 || !(longest >= st.Ms) {
		return ""
	}
	const h = 12.0
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" role="img" aria-label="decode step %.1f ms at %d sequences">`,
		stepBarWidth+56, h, st.Ms, st.Sequences)
	x := 0.0
	for i, p := range perf.StepParts() {
		v := st.PartsMs[p.String()]
		if v <= 0 {
			continue
		}
		bw := stepBarWidth * v / longest
		fmt.Fprintf(&sb, `<rect x="%.2f" y="0" width="%.2f" height="%g" fill="%s"><title>%s %.2f ms (%.0f%%)</title></rect>`,
			x, bw, h, partColour(i), p, v, 100*v/st.Ms)
		x += bw
	}
	fmt.Fprintf(&sb, `<text x="%.1f" y="10" font-size="10">%.1f ms</text></svg>`, x+4, st.Ms)
	return template.HTML(sb.String())
}

// stepLegend names the colours of stepBar's parts.
func stepLegend() template.HTML {
	var sb strings.Builder
	for i, p := range perf.StepParts() {
		fmt.Fprintf(&sb, `<span class="part"><svg width="10" height="10"><rect width="10" height="10" fill="%s"/></svg> %s</span> `, partColour(i), p)
	}
	return template.HTML(sb.String())
}
