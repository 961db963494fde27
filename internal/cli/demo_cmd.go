package cli

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/examples"
	"github.com/gpuplane/gpuplane/internal/demo"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/report"
	"github.com/gpuplane/gpuplane/internal/scenario"
	"github.com/gpuplane/gpuplane/internal/slo"
	"github.com/gpuplane/gpuplane/internal/strict"
)

// demoTimeline prints one row per planner decision that changed something,
// plus every minute.
type demoTimeline struct{ res *demo.Result }

func (t demoTimeline) Header() []string {
	return []string{"TIME", "REQ/S", "PREDICTED", "PREFILL", "DECODE", "TTFT(ms)", "ITL(ms)", "SLO", "REASON"}
}

func (t demoTimeline) Rows() [][]string {
	var rows [][]string
	series := t.res.Planned.Summary.Series
	prevP, prevD := -1, -1
	for _, d := range t.res.Planned.Decisions {
		changed := d.Prefill != prevP || d.Decode != prevD
		if !changed && int(d.Time)%60 != 0 {
			continue
		}
		prevP, prevD = d.Prefill, d.Decode
		var ttft, itl, att float64
		n := 0.0
		for _, p := range series {
			if p.Start < d.Time && p.Start >= d.Time-60 && p.Completions > 0 {
				ttft, itl, att, n = ttft+p.TTFTMeanms, itl+p.ITLMeanms, att+p.Attainment, n+1
			}
		}
		if n > 0 {
			ttft, itl, att = ttft/n, itl/n, att/n
		}
		reason := ""
		if changed {
			reason = d.Reason
		}
		rows = append(rows, []string{fmt.Sprintf("%.0fs", d.Time), fmt.Sprintf("%.2f", d.ObservedRate), fmt.Sprintf("%.2f", d.PredictedRate),
			fmt.Sprint(d.Prefill), fmt.Sprint(d.Decode), fmt.Sprintf("%.0f", ttft), fmt.Sprintf("%.1f", itl), fmt.Sprintf("%.1f%%", 100*att), reason})
	}
	return rows
}

func newDemoCmd(g *globals) *cobra.Command {
	var file, reportFile string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the SLO planner on the reference burst scenario and compare it with static provisioning",
		Long: `Simulates Qwen3-32B-FP8 on H100s (TTFT <= 500 ms, ITL <= 30 ms): normal short traffic on
1 prefill + 1 decode worker, then 200 users sending ~4000-token requests for ~500-token answers
for ten minutes, then calm again. The planner's core scales the pools (new workers start in 90 s);
the same traffic also runs statically at the planner's peak and at the base. Prints the planner's
timeline and the comparison, and writes an HTML report.

  gpuplane demo                        # embedded scenario, report to gpuplane-demo.html
  gpuplane demo -f my-burst.yaml --report out.html -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, name := examples.PlannerBurst, "embedded examples/planner-burst.yaml"
			if file != "" {
				b, err := strict.ReadFile(file)
				if err != nil {
					return fmt.Errorf("-f: %w", err)
				}
				data, name = b, file
			}
			var sc scenario.Scenario
			if err := strict.Unmarshal(bytes.TrimSpace(data), &sc); err != nil {
				return fmt.Errorf("scenario %s: %w", name, err)
			}
			env, err := g.env()
			if err != nil {
				return err
			}
			res, err := demo.Execute(&sc, env.Catalog, env.Params)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", name, err)
			}
			sub := fmt.Sprintf("%s on %s (%s), prefill tp%d + decode tp%d, SLO TTFT %s <= %.0f ms / ITL %s <= %.0f ms; %s",
				sc.Model, sc.GPU, sc.Precision, sc.Deployment.Prefill.TP, sc.Deployment.Decode.TP, slo.Stat(sc.SLO.TTFTPercentile), sc.SLO.TTFTMs,
				slo.Stat(sc.SLO.ITLPercentile), sc.SLO.ITLMs, name)
			if reportFile != "" {
				if err := writeFile(reportFile, func(w *bytes.Buffer) error {
					return report.WriteDemo(w, "gpuplane demo: the SLO planner under a burst", sub, res)
				}); err != nil {
					return fmt.Errorf("--report: %w", err)
				}
			}
			f, _ := g.format()
			if f != output.Table {
				return output.Write(g.stdout, f, res)
			}
			w := g.stdout
			fmt.Fprintln(w, sub)
			fmt.Fprintln(w)
			if err := output.WriteTable(w, demoTimeline{res}); err != nil {
				return err
			}
			fmt.Fprintf(w, "\nburst from %.0f s; reaction window ends at %.0f s (one planner interval to see it + the start-up delay)\n\n", res.BurstStart, res.ReactionEnd)
			if err := output.WriteTable(w, demoComparison{res}); err != nil {
				return err
			}
			if reportFile != "" {
				fmt.Fprintf(w, "\nreport: %s\n", reportFile)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "scenario YAML with a planner section and a workload.burst (default: the embedded reference)")
	cmd.Flags().StringVar(&reportFile, "report", "gpuplane-demo.html", "HTML report to write (empty: none)")
	return cmd
}

type demoComparison struct{ res *demo.Result }

func (c demoComparison) Header() []string {
	return []string{"PROVISIONING", "SLO ATTAINMENT", "BEFORE BURST", "AFTER REACTION", "SLO JUDGED", "TTFT P99(ms)", "GPU-HOURS"}
}

func (c demoComparison) Rows() [][]string {
	var rows [][]string
	for _, r := range []demo.Run{c.res.Planned, c.res.StaticPeak, c.res.StaticBase} {
		name := fmt.Sprintf("planner (peak %d + %d)", c.res.PeakPrefill, c.res.PeakDecode)
		if r.Prefill > 0 {
			name = fmt.Sprintf("%s (%d + %d)", r.Name, r.Prefill, r.Decode)
		}
		s := r.Summary
		judged := "-"
		if v := s.SLO; v != nil {
			judged = v.String()
		}
		rows = append(rows, []string{name, fmt.Sprintf("%.2f%%", 100*s.SLOAttainment), fmt.Sprintf("%.2f%%", 100*r.Before),
			fmt.Sprintf("%.2f%%", 100*r.After), judged, fmt.Sprintf("%.0f", s.TTFTms.P99), fmt.Sprintf("%.2f", s.GPUHours)})
	}
	return rows
}
