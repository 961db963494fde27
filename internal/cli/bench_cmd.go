package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/bench"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/report"
	"github.com/gpuplane/gpuplane/internal/workload"
)

func newBenchCmd(g *globals) *cobra.Command {
	var o bench.Options
	var arrival, trace, traceFormat, reportFile string
	var isl, osl int
	var speedup, sloTTFT, sloITL float64
	var progress bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load an OpenAI-compatible server (vLLM, SGLang, the emulator) and measure TTFT, ITL, throughput and goodput",
		Long: `Sends streaming completions at a rate (Poisson or constant), replays a trace (Azure CSV, Mooncake or
gpuplane JSONL), or runs N closed-loop users, for a bounded time and request count, and measures each
request as a user sees it: time to first token, the gaps between streamed tokens, end-to-end latency.
Reports percentiles, throughput, SLO attainment and goodput; -o json for machines, --report for an
HTML page. Prompts are random words of four characters a token (the emulator's rule).

  gpuplane bench --url http://127.0.0.1:8000 --model Qwen/Qwen3-8B --rate 4 --isl 4000 --osl 500 --duration 60s
  gpuplane bench --url $URL --model m --users 200 --isl 4000 --osl 500 --duration 2m --slo-ttft 500 --slo-itl 30
  gpuplane bench --url $URL --model m --trace ../shared/traces/azure_conv_2023.csv --speedup 10 --duration 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := g.format()
			if err != nil {
				return err
			}
			switch arrival {
			case "poisson":
			case "constant":
				o.Constant = true
			default:
				return fmt.Errorf("--arrival: %q, want poisson or constant", arrival)
			}
			if isl < 1 || osl < 1 {
				return fmt.Errorf("--isl and --osl: want >= 1 tokens (got %d, %d)", isl, osl)
			}
			o.ISL, o.OSL = workload.Fixed{N: isl}, workload.Fixed{N: osl}
			for _, v := range []struct {
				flag string
				ms   float64
			}{{"--slo-ttft", sloTTFT}, {"--slo-itl", sloITL}} {
				if !(v.ms >= 0 && v.ms <= 3.6e6) { // NaN fails too
					return fmt.Errorf("%s: %g ms, want 0 (none) to 3600000 (an hour)", v.flag, v.ms)
				}
			}
			o.SLOTTFT = time.Duration(sloTTFT * float64(time.Millisecond))
			o.SLOITL = time.Duration(sloITL * float64(time.Millisecond))
			if cmd.Flags().Changed("timeout") && o.RequestTimeout <= 0 {
				return fmt.Errorf("--timeout: %s, want > 0 (a limit per request)", o.RequestTimeout)
			}
			// A flag of another load would be silently ignored.
			changed := cmd.Flags().Changed
			switch {
			case changed("speedup") && trace == "":
				return fmt.Errorf("--speedup applies to --trace only")
			case changed("trace-format") && trace == "":
				return fmt.Errorf("--trace-format applies to --trace only")
			case changed("arrival") && o.Rate == 0:
				return fmt.Errorf("--arrival applies to --rate only (--users send when their last request ends; a trace has its own times)")
			case trace != "" && (changed("isl") || changed("osl")):
				return fmt.Errorf("--isl/--osl: the trace gives each request's sizes; drop them with --trace")
			}
			if !(speedup > 0 && speedup <= 1e6) { // NaN fails too
				return fmt.Errorf("--speedup: %g, want above 0 and at most 1000000 (2 replays the trace twice as fast)", speedup)
			}
			if trace != "" {
				f, err := os.Open(trace)
				if err != nil {
					return fmt.Errorf("--trace: %w", err)
				}
				defer f.Close()
				if o.Source, err = workload.NewReplay(f, traceFormat, workload.ReplayOptions{Speedup: speedup}); err != nil {
					return fmt.Errorf("--trace %s: %w", trace, err)
				}
			}
			if !cmd.Flags().Changed("progress") {
				progress = isTerminal(g.stderr)
			}
			if progress {
				o.Progress = func(p bench.Progress) {
					fmt.Fprintf(g.stderr, "\r%5.0fs  sent %d  done %d  failed %d  in flight %d  %.0f tok/s   ",
						p.Elapsed.Seconds(), p.Sent, p.Done, p.Failed, p.InFlight, p.OutputTokensPerSec)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s, _, err := bench.Run(ctx, o)
			if progress {
				fmt.Fprintln(g.stderr)
			}
			if err != nil {
				return err
			}
			if reportFile != "" {
				f, err := os.Create(reportFile)
				if err != nil {
					return fmt.Errorf("--report: %w", err)
				}
				if err := report.WriteBench(f, "gpuplane bench", s); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if format != output.Table {
				err = output.Write(g.stdout, format, s)
			} else {
				err = writeBenchText(g, s)
			}
			if err == nil && s.Requests > 0 && s.Failed == s.Requests {
				// A run that measured nothing is not a result: say so in the exit status too.
				err = fmt.Errorf("every request failed (%d of %d); the server at %s answered none, see the errors above", s.Failed, s.Requests, o.URL)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "url", "http://127.0.0.1:8000", "base URL of the OpenAI-compatible server")
	f.StringVar(&o.Model, "model", "", "model name the server serves")
	f.BoolVar(&o.Chat, "chat", false, "use /v1/chat/completions instead of /v1/completions")
	f.Float64Var(&o.Rate, "rate", 0, "open-loop requests per second")
	f.StringVar(&arrival, "arrival", "poisson", "poisson or constant spacing with --rate")
	f.IntVar(&o.Users, "users", 0, "closed-loop users")
	f.StringVar(&trace, "trace", "", "replay arrivals and sizes from a trace file")
	f.StringVar(&traceFormat, "trace-format", workload.FormatAzure, "azure, mooncake or gpuplane")
	f.Float64Var(&speedup, "speedup", 1, "trace time divided by this")
	f.IntVar(&isl, "isl", 1000, "prompt tokens (rate and users)")
	f.IntVar(&osl, "osl", 200, "output tokens, sent as max_tokens with ignore_eos")
	f.DurationVar(&o.Duration, "duration", time.Minute, "stop sending after this long")
	f.IntVar(&o.Requests, "requests", 0, "stop after this many requests (0: no limit)")
	f.DurationVar(&o.RequestTimeout, "timeout", 10*time.Minute, "per-request limit")
	f.Float64Var(&sloTTFT, "slo-ttft", 0, "TTFT SLO in ms for goodput (0: none)")
	f.Float64Var(&sloITL, "slo-itl", 0, "time-per-output-token SLO in ms for goodput (0: none)")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed for arrivals and prompts")
	f.StringVar(&reportFile, "report", "", "write an HTML report here")
	f.BoolVar(&progress, "progress", false, "live progress line on stderr (default: on when stderr is a terminal)")
	return cmd
}

func writeBenchText(g *globals, s *bench.Summary) error {
	w := g.stdout
	fmt.Fprintf(w, "%s load on %s (%s): %d requests in %.1f s, %d failed\n", s.Load, s.URL, s.Model, s.Requests, s.Duration, s.Failed)
	if s.Stopped != "" {
		fmt.Fprintf(w, "  %s\n", s.Stopped)
	}
	for e, n := range s.Errors {
		fmt.Fprintf(w, "  %dx %s\n", n, e)
	}
	if s.ShortAnswers > 0 {
		fmt.Fprintf(w, "  %d of %d answers ended before max_tokens although ignore_eos was set: the server does not honour it, and TPOT and throughput count the tokens it sent\n", s.ShortAnswers, s.Succeeded)
	}
	fmt.Fprintf(w, "throughput      %.2f req/s, %.0f output tokens/s\n", s.RequestsPerSec, s.OutputTokensPerSec)
	row := func(name string, p bench.Percentiles) {
		if s.Succeeded == 0 {
			// Zeros would read as a fast server; nothing was measured.
			fmt.Fprintf(w, "%-15s none: no request completed\n", name)
			return
		}
		fmt.Fprintf(w, "%-15s mean %8.1f  p50 %8.1f  p90 %8.1f  p99 %8.1f  max %8.1f ms\n", name, p.Mean, p.P50, p.P90, p.P99, p.Max)
	}
	row("TTFT", s.TTFT)
	row("ITL", s.ITL)
	row("TPOT", s.TPOT)
	row("end to end", s.E2E)
	fmt.Fprintf(w, "SLO attainment  %.1f%% (%s), goodput %.2f req/s\n", 100*s.Attainment, s.SLOText(), s.Goodput)
	return nil
}
