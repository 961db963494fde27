package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/frontend"
	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/workers"
)

func newFrontendCmd(g *globals) *cobra.Command {
	var aggURLs, prefill, decode []string
	var sel, prefillSel, decodeSel, ns, kubeconfig, host string
	var port, workerPort, maxInFlight int
	cmd := &cobra.Command{
		Use:   "frontend",
		Short: "Route OpenAI requests to workers (aggregated, or prefill then decode) and export request metrics",
		Long: `Routes /v1/completions and /v1/chat/completions to the least-busy worker; in disaggregated mode a
prefill worker computes the prompt (one token) and a decode worker streams the answer. Workers are a
static list or the Running, Ready pods of label selectors (re-read every 2 s). /metrics exports
gpuplane_frontend_* request metrics: requests, TTFT, inter-token latency, duration, ISL, OSL.

  gpuplane frontend --workers http://127.0.0.1:8000,http://127.0.0.1:8001
  gpuplane frontend -n serving --prefill-selector role=prefill --decode-selector role=decode --worker-port 8000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkServeFlags(port, maxInFlight); err != nil {
				return err
			}
			if workerPort < 1 || workerPort > 65535 {
				return fmt.Errorf("--worker-port: %d, want 1 to 65535", workerPort)
			}
			if err := oneWorkerSource(aggURLs, prefill, decode, sel, prefillSel, decodeSel); err != nil {
				return err
			}
			// The pods' namespace, port and cluster mean nothing to a static
			// list: refuse them rather than ignore them.
			if sel == "" && prefillSel == "" && decodeSel == "" {
				for _, name := range []string{"namespace", "worker-port", "kubeconfig"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--%s applies to worker pods found by --selector (or --prefill-selector and --decode-selector); static --workers are reached at their URLs", name)
					}
				}
			}
			f := &frontend.Frontend{}
			pods := func(s string) (frontend.Discovery, error) {
				c, err := kubeclient.Clientset(kubeconfig)
				if err != nil {
					return nil, err
				}
				return workers.Pods{Client: c, Namespace: ns, Selector: s, Port: workerPort}, nil
			}
			var err error
			switch {
			case len(aggURLs) > 0:
				if f.Agg, err = workers.ParseStatic("--workers", aggURLs); err != nil {
					return err
				}
			case len(prefill) > 0 && len(decode) > 0:
				if f.Prefill, err = workers.ParseStatic("--prefill-workers", prefill); err != nil {
					return err
				}
				if f.Decode, err = workers.ParseStatic("--decode-workers", decode); err != nil {
					return err
				}
			case sel != "":
				if f.Agg, err = pods(sel); err != nil {
					return err
				}
			case prefillSel != "" && decodeSel != "":
				if f.Prefill, err = pods(prefillSel); err != nil {
					return err
				}
				if f.Decode, err = pods(decodeSel); err != nil {
					return err
				}
			default:
				return errors.New("give the workers: --workers, --prefill-workers with --decode-workers, --selector, or --prefill-selector with --decode-selector")
			}
			reg := prometheus.NewRegistry()
			if err := f.Register(reg); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
			if err != nil {
				return fmt.Errorf("--host/--port: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go f.Run(ctx)
			fmt.Fprintf(g.stderr, "frontend on http://%s\n", ln.Addr())
			return serve(ctx, ln, f.Handler(reg), 30*time.Second, maxInFlight)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&aggURLs, "workers", nil, "aggregated workers' base URLs")
	fl.StringSliceVar(&prefill, "prefill-workers", nil, "prefill workers' base URLs")
	fl.StringSliceVar(&decode, "decode-workers", nil, "decode workers' base URLs")
	fl.StringVar(&sel, "selector", "", "label selector of aggregated worker pods")
	fl.StringVar(&prefillSel, "prefill-selector", "", "label selector of prefill worker pods")
	fl.StringVar(&decodeSel, "decode-selector", "", "label selector of decode worker pods")
	fl.StringVarP(&ns, "namespace", "n", "default", "namespace of the worker pods")
	fl.IntVar(&workerPort, "worker-port", 8000, "port the worker pods serve on")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fl.StringVar(&host, "host", "127.0.0.1", "address to listen on")
	fl.IntVar(&port, "port", 8080, "port to listen on")
	fl.IntVar(&maxInFlight, "max-concurrent-requests", 8192, "requests routed at once; more are answered 429 (0: no limit)")
	return cmd
}

// oneWorkerSource refuses flags that name workers two ways (the second
// would be ignored), half a disaggregated pair, and a selector that does
// not parse, before any cluster is asked.
func oneWorkerSource(agg, prefill, decode []string, sel, prefillSel, decodeSel string) error {
	var given []string
	if len(agg) > 0 {
		given = append(given, "--workers")
	}
	if len(prefill) > 0 || len(decode) > 0 {
		given = append(given, "--prefill-workers/--decode-workers")
	}
	if sel != "" {
		given = append(given, "--selector")
	}
	if prefillSel != "" || decodeSel != "" {
		given = append(given, "--prefill-selector/--decode-selector")
	}
	switch {
	case len(given) > 1:
		return fmt.Errorf("%s: give the workers one way; the frontend routes to one set", strings.Join(given, " and "))
	case (len(prefill) > 0) != (len(decode) > 0):
		return errors.New("--prefill-workers and --decode-workers: give both, for prefill then decode")
	case (prefillSel != "") != (decodeSel != ""):
		return errors.New("--prefill-selector and --decode-selector: give both, for prefill then decode")
	}
	for _, s := range []struct{ flag, sel string }{{"--selector", sel}, {"--prefill-selector", prefillSel}, {"--decode-selector", decodeSel}} {
		if s.sel == "" {
			continue
		}
		if err := workers.CheckSelector(s.flag, s.sel); err != nil {
			return err
		}
	}
	return nil
}
