package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/listenaddr"
	"github.com/gpuplane/gpuplane/internal/manifest"
	"github.com/gpuplane/gpuplane/internal/operator/controller"
)

func newControllerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "controller", Short: "The ServingDeployment controller (runs in the cluster)"}
	var o controller.Options
	var kubeconfig string
	var dev bool
	run := &cobra.Command{
		Use:   "run",
		Short: "Plan, deploy and autoscale ServingDeployments on the cluster's DRA devices",
		Long: `Watches gpuplane.io/v1alpha1 ServingDeployments. For each one it reads the free devices from the
cluster's ResourceSlices and claims, runs configure for the SLO, writes the plan to the status,
creates the claim templates, worker pools and router, and runs the SLO planner against the
workers' metrics (spec.planner.mode: auto scales, advisory reports, off keeps the plan).

  gpuplane controller run --kubeconfig ~/.kube/config
  gpuplane controller run --leader-elect --metrics-addr :8443 --health-addr :8081   # in a pod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseDevMode(dev), zap.WriteTo(g.stderr)))
			if err := checkListenAddr("--metrics-addr", o.MetricsAddr); err != nil {
				return err
			}
			if err := checkListenAddr("--health-addr", o.HealthAddr); err != nil {
				return err
			}
			if _, err := name.ParseReference(o.FrontendImage); err != nil {
				return fmt.Errorf("--frontend-image: %q: %v; give an image reference such as %s", o.FrontendImage, err, manifest.DefaultGPUPlaneImage)
			}
			env, err := g.env()
			if err != nil {
				return err
			}
			cfg, err := kubeclient.Config(kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			if o.LeaderElect && o.LeaderElectionNamespace == "" {
				if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
					o.LeaderElectionNamespace = string(ns)
				} else {
					o.LeaderElectionNamespace = "default"
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return controller.Run(ctx, cfg, env, o)
		},
	}
	f := run.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	f.StringVar(&o.MetricsAddr, "metrics-addr", "127.0.0.1:8082", "address of /metrics (0 turns it off; \":8082\" in a pod)")
	f.StringVar(&o.HealthAddr, "health-addr", "127.0.0.1:8081", "address of /healthz and /readyz (0 turns it off)")
	f.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader among replicas (a Lease)")
	f.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the pod's)")
	f.StringVar(&o.FrontendImage, "frontend-image", manifest.DefaultGPUPlaneImage, "gpuplane image of the router and emulated engines")
	f.BoolVar(&dev, "dev-logs", false, "human-readable logs instead of JSON")
	cmd.AddCommand(run)
	return cmd
}

// checkListenAddr refuses an address a server cannot listen on ("0" turns
// the server off), before the controller connects to anything.
func checkListenAddr(flag, addr string) error {
	if addr == "0" {
		return nil
	}
	return listenaddr.Check(flag, addr, ":8082, or 0 to turn it off")
}
