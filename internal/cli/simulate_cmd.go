package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/plansim"
	"github.com/gpuplane/gpuplane/internal/report"
	"github.com/gpuplane/gpuplane/internal/scenario"
	"github.com/gpuplane/gpuplane/internal/sim"
)

type simTable struct{ *sim.Summary }

func (t simTable) Header() []string { return []string{"METRIC", "VALUE"} }
func (t simTable) Rows() [][]string {
	s := t.Summary
	rows := [][]string{
		{"requests", fmt.Sprint(s.Requests)}, {"completed", fmt.Sprint(s.Completed)}, {"unfinished", fmt.Sprint(s.Unfinished)},
		{"rejected", fmt.Sprint(s.Rejected)}, {"slo attainment", fmt.Sprintf("%.2f%%", 100*s.SLOAttainment)},
		{"goodput", fmt.Sprintf("%.2f req/s", s.GoodputRPS)},
		{"ttft p50/p90/p99", fmt.Sprintf("%.1f / %.1f / %.1f ms", s.TTFTms.P50, s.TTFTms.P90, s.TTFTms.P99)},
		{"itl p50/p90/p99", fmt.Sprintf("%.2f / %.2f / %.2f ms", s.ITLms.P50, s.ITLms.P90, s.ITLms.P99)},
		{"gpu hours", fmt.Sprintf("%.3f", s.GPUHours)}, {"simulated", simSeconds(s.SimSeconds)},
	}
	if v := s.SLO; v != nil {
		rows = append(rows, []string{"slo", v.String()})
	}
	return rows
}

func newSimulateCmd(g *globals) *cobra.Command {
	var file, htmlOut, jsonOut, reqOut string
	cmd := &cobra.Command{
		Use:   "simulate -f scenario.yaml",
		Short: "Simulate a serving deployment over time on the performance model",
		Long: `Runs a discrete-event simulation of a deployment (aggregated, or prefill and decode
pools) under a workload (Poisson over a rate profile, N users, or a trace replay) and
reports SLO attainment, goodput, latency percentiles, GPU-hours and per-interval series.

  gpuplane simulate -f examples/burst.yaml -o report.html --json summary.json --requests requests.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("-f: a scenario file is required (see examples/)")
			}
			if strings.HasSuffix(g.output, ".html") {
				// `simulate -o report.html` names the report, as in `--report`.
				htmlOut, g.output = g.output, string(output.Table)
			}
			env, err := g.env()
			if err != nil {
				return err
			}
			sc, err := scenario.Load(file)
			if err != nil {
				return err
			}
			var onReq func(sim.Record)
			var flush func() error
			if reqOut != "" {
				f, err := os.Create(reqOut)
				if err != nil {
					return fmt.Errorf("--requests: %w", err)
				}
				defer f.Close()
				cw := csv.NewWriter(f)
				_ = cw.Write([]string{"id", "worker", "arrival_s", "isl", "osl", "ttft_ms", "itl_ms", "e2e_ms"})
				ff := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
				onReq = func(r sim.Record) {
					_ = cw.Write([]string{strconv.FormatInt(r.ID, 10), r.Worker, ff(r.ArrivalS), strconv.Itoa(r.ISL), strconv.Itoa(r.OSL), ff(r.TTFTms), ff(r.ITLms), ff(r.E2E)})
				}
				flush = func() error { cw.Flush(); return cw.Error() }
			}
			s, pl, err := scenario.BuildPlanned(sc, env.Catalog, env.Params, onReq)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", file, err)
			}
			var sum *sim.Summary
			var decisions []planner.Decision
			if pl != nil {
				// The planner's core scales the pools as the run goes on.
				decisions, sum, err = plansim.Run(s, pl)
			} else {
				sum, err = s.Run()
			}
			if err != nil {
				return err
			}
			for _, d := range decisions {
				g.log.Debug("planner", "t", d.Time, "prefill", d.Prefill, "decode", d.Decode, "reason", d.Reason)
			}
			if flush != nil {
				if err := flush(); err != nil {
					return fmt.Errorf("--requests: %w", err)
				}
			}
			if jsonOut != "" {
				var v any = sum
				if pl != nil {
					v = struct {
						*sim.Summary
						Decisions []planner.Decision `json:"planner_decisions"`
					}{sum, decisions}
				}
				b, _ := json.MarshalIndent(v, "", "  ")
				if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
					return fmt.Errorf("--json: %w", err)
				}
			}
			if htmlOut != "" {
				f, err := os.Create(htmlOut)
				if err != nil {
					return fmt.Errorf("--report: %w", err)
				}
				defer f.Close()
				sub := fmt.Sprintf("%s on %s (%s), %s deployment, %s workload, SLO TTFT %.0f ms / ITL %.0f ms",
					sc.Model, sc.GPU, sc.Precision, sc.Deployment.Mode, sc.Workload.Kind, sc.SLO.TTFTMs, sc.SLO.ITLMs)
				if err := report.WriteSim(f, "gpuplane simulate: "+file, sub, sum); err != nil {
					return fmt.Errorf("--report: %w", err)
				}
			}
			f, _ := g.format()
			if f == output.Table {
				return output.Write(g.stdout, f, simTable{sum})
			}
			return output.Write(g.stdout, f, sum)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "scenario YAML")
	cmd.Flags().StringVar(&htmlOut, "report", "", "write a self-contained HTML report (also: -o FILE.html)")
	cmd.Flags().StringVar(&jsonOut, "json", "", "write the summary as JSON")
	cmd.Flags().StringVar(&reqOut, "requests", "", "write one CSV row per finished request")
	return cmd
}

// simSeconds prints simulated time: tenths below 100 s, where a short run
// would otherwise read "0 s".
func simSeconds(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.1f s", v)
	}
	return fmt.Sprintf("%.0f s", v)
}
