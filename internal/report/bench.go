package report

import (
	"fmt"
	"html/template"
	"io"

	"github.com/gpuplane/gpuplane/internal/bench"
)

// WriteBench writes the HTML report of a load-generator run: the summary
// table and, per second of send time, load, TTFT, TPOT and SLO attainment.
func WriteBench(w io.Writer, title string, s *bench.Summary) error {
	se := s.Series
	charts := []Chart{
		{Title: "Requests sent", Unit: "req/s", Lines: []Line{{"sent", se.Sent}}},
		{Title: "TTFT (mean by send second)", Unit: "ms", Lines: []Line{{"ttft", se.TTFTms}}},
		{Title: "Time per output token", Unit: "ms", Lines: []Line{{"tpot", se.TPOTms}}},
		{Title: "Requests meeting the SLO", Unit: "%", Lines: []Line{{"met", se.MetSLOPct}}},
	}
	var svgs []template.HTML
	for _, c := range charts {
		svgs = append(svgs, c.SVG(se.Times))
	}
	keys := []string{"load", "requests", "failed", "req/s", "output tok/s", "TTFT p50/p90/p99 (ms)", "ITL p50/p90/p99 (ms)",
		"E2E p50/p99 (ms)", "SLO attainment", "goodput (req/s)"}
	ttft := fmt.Sprintf("%.0f / %.0f / %.0f", s.TTFT.P50, s.TTFT.P90, s.TTFT.P99)
	itl := fmt.Sprintf("%.1f / %.1f / %.1f", s.ITL.P50, s.ITL.P90, s.ITL.P99)
	e2e := fmt.Sprintf("%.0f / %.0f", s.E2E.P50, s.E2E.P99)
	if s.Succeeded == 0 {
		// Zeros would read as a fast server; nothing was measured.
		ttft, itl, e2e = "none completed", "none completed", "none completed"
	}
	vals := []string{s.Load, fmt.Sprint(s.Requests), fmt.Sprint(s.Failed), fmt.Sprintf("%.2f", s.RequestsPerSec),
		fmt.Sprintf("%.0f", s.OutputTokensPerSec), ttft, itl, e2e,
		fmt.Sprintf("%.1f%%", 100*s.Attainment), fmt.Sprintf("%.2f", s.Goodput)}
	sub := fmt.Sprintf("%s, model %s, %.0f s; SLO: %s", s.URL, s.Model, s.Duration, s.SLOText())
	return page.Execute(w, map[string]any{"Title": title, "Subtitle": sub, "Keys": keys, "Values": vals, "Charts": svgs})
}
