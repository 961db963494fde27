package cli

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/plannerlive"
	"github.com/gpuplane/gpuplane/internal/strict"
)

func newPlannerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "planner", Short: "The SLO planner against a live cluster"}
	var file, kubeconfig string
	var dryRun, once bool
	var startPrefill, startDecode int
	run := &cobra.Command{
		Use:   "run",
		Short: "Scale prefill and decode pools through the scale subresource to hold the SLO",
		Long: `Runs the planner's core as a long-lived process: every interval it reads the pools' vLLM or SGLang
metrics (Prometheus query API, or the workers' /metrics directly), predicts the load one start-up
delay ahead, sizes the pools from the performance model, and sets their replicas through the
Kubernetes scale subresource. Serves its own /metrics and /healthz. With --dry-run (advisory mode)
it only reports. Missing or stale metrics: it holds the last decision.

  gpuplane planner run --config planner.yaml
  gpuplane planner run --config planner.yaml --dry-run --once`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := strict.ReadFile(file)
			if err != nil {
				return fmt.Errorf("--config: %w", err)
			}
			cfg, err := plannerlive.ParseConfig(data)
			if err != nil {
				return fmt.Errorf("--config %s: %w", file, err)
			}
			env, err := g.env()
			if err != nil {
				return err
			}
			p, err := cfg.Build(env)
			if err != nil {
				return fmt.Errorf("--config %s: %w", file, err)
			}
			src, err := cfg.Source(p.Config().Interval, func() (kubernetes.Interface, error) { return kubeclient.Clientset(kubeconfig) })
			if err != nil {
				return err
			}
			// A long-running process reports its decisions at info.
			level := slog.LevelInfo
			if g.verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
			r := &plannerlive.Runner{Planner: p, Metrics: src, DryRun: dryRun || cfg.DryRun, Log: logr.FromSlogHandler(log.Handler())}
			startGiven := false
			for _, f := range []struct {
				name string
				n    int
			}{{"prefill-replicas", startPrefill}, {"decode-replicas", startDecode}} {
				if !cmd.Flags().Changed(f.name) {
					continue
				}
				startGiven = true
				if !r.DryRun {
					return fmt.Errorf("--%s: applies to a dry run without a cluster (--dry-run); a live run reads the replicas from the targets", f.name)
				}
				if f.n < 1 || f.n > 1024 {
					return fmt.Errorf("--%s: %d, want 1 to 1024 replicas to start from", f.name, f.n)
				}
			}
			rc, err := kubeclient.Config(kubeconfig)
			switch {
			case err == nil:
				if startGiven {
					log.Warn("a cluster is reachable: the dry run starts from the targets' replicas, not --prefill-replicas/--decode-replicas")
				}
				dyn, err := dynamic.NewForConfig(rc)
				if err != nil {
					return fmt.Errorf("kubernetes client: %w", err)
				}
				r.Prefill = &plannerlive.ScaleClient{Client: dyn, Target: cfg.Targets.Prefill}
				r.Decode = &plannerlive.ScaleClient{Client: dyn, Target: cfg.Targets.Decode}
			case r.DryRun:
				// Advisory mode needs no cluster: the pools start where the flags say and follow the advice.
				pc := p.Config()
				start := [2]int{max(startPrefill, pc.MinPrefill), max(startDecode, pc.MinDecode)}
				log.Info("no cluster: the dry run tracks the replicas it advises", "reason", err.Error(), "prefill", start[0], "decode", start[1])
				r.Prefill, r.Decode = plannerlive.NewAdvised(start[0]), plannerlive.NewAdvised(start[1])
			default:
				return fmt.Errorf("%w (a dry run, --dry-run, needs no cluster)", err)
			}
			if r.DryRun && !once {
				r.OnDecision = func(d planner.Decision, outcome string) {
					fmt.Fprintf(g.stdout, "%s  prefill %d  decode %d  %s: %s\n", time.Now().UTC().Format(time.TimeOnly), d.Prefill, d.Decode, outcome, d.Reason)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if once {
				d, err := r.Tick(ctx, time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "prefill %d, decode %d: %s\n", d.Prefill, d.Decode, d.Reason)
				return nil
			}
			reg := prometheus.NewRegistry()
			if err := r.Register(reg); err != nil {
				return err
			}
			l, err := plannerlive.Listen(cfg.Listen)
			if err != nil {
				return err
			}
			errc := make(chan error, 1)
			go func() { errc <- plannerlive.Serve(ctx, l, r.Handler(reg, time.Now)) }()
			log.Info("planner running", "listen", cfg.Listen, "interval_s", p.Config().Interval, "dry_run", r.DryRun)
			if err := r.Run(ctx); err != nil {
				return err
			}
			stop()
			return <-errc
		},
	}
	run.Flags().StringVar(&file, "config", "", "planner run file (planner, engine, metrics, targets); see docs/PLANNER.md")
	run.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	run.Flags().BoolVar(&dryRun, "dry-run", false, "advisory mode: report decisions, scale nothing")
	run.Flags().IntVar(&startPrefill, "prefill-replicas", 1, "dry run without a cluster: the prefill replicas to start from")
	run.Flags().IntVar(&startDecode, "decode-replicas", 1, "dry run without a cluster: the decode replicas to start from")
	run.Flags().BoolVar(&once, "once", false, "tick once and exit (the first tick of a scrape source only holds)")
	_ = run.MarkFlagRequired("config")
	cmd.AddCommand(run)
	return cmd
}

// restConfig loads a kubeconfig the way kubectl does, or the in-cluster one.
