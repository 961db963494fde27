// Package drivercli is the command line of gpuplane-dra-driver, the DRA
// driver's kubelet plugin binary that the Helm chart's DaemonSet runs. It is
// apart from the gpuplane CLI so that only this binary links NVML (cgo).
package drivercli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/healthfile"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/nvmldiscovery"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/listenaddr"
)

// Main runs the driver binary until ctx ends or a signal arrives and
// returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{Use: "gpuplane-dra-driver", Short: "gpuplane's DRA driver for GPUs, MIG partitions, vGPU slices and shared GPUs",
		SilenceUsage: true, SilenceErrors: true}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd())
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

func featureFlags(cmd *cobra.Command, f *slices.Features) {
	cmd.Flags().BoolVar(&f.DynamicMIG, "dynamic-mig", false, "publish every MIG placement as a partitionable device (created at prepare)")
	cmd.Flags().BoolVar(&f.SharedGPUs, "shared-gpus", false, "publish whole GPUs with consumable memory and compute, shared by many claims")
	cmd.Flags().BoolVar(&f.VGPU, "vgpu", true, "publish a vGPU guest's device as type vgpu with its profile and fraction")
	cmd.Flags().BoolVar(&f.NVLinkDomains, "nvlink-domains", false, "publish NVLink domain and clique attributes")
}

func newRunCmd() *cobra.Command {
	var kubeconfig, nodeName, discovery, profile, pluginDir, registrarDir, cdiDir, healthzAddr, healthEvents string
	var migLayout []string
	var f slices.Features
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the kubelet plugin on this node",
		Long: `Discovers the node's GPUs (NVML, or a device profile on fake nodes), publishes them as
ResourceSlices of driver gpu.gpuplane.io, and serves the kubelet's DRA gRPC API: prepare writes a
CDI spec per claim and records it in a checkpoint, unprepare undoes it. Critical XID errors taint
the device (NVML discovery).

  gpuplane-dra-driver run --node-name $NODE_NAME --dynamic-mig
  gpuplane-dra-driver run --node-name kwok-0 --discovery profile --profile azure-nv12ads-a10-v5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodeName == "" {
				nodeName = os.Getenv("NODE_NAME")
			}
			if nodeName == "" {
				return fmt.Errorf("--node-name: required (or set NODE_NAME from the downward API)")
			}
			if healthEvents != "" && discovery != "profile" {
				return fmt.Errorf("--health-events: %q is for --discovery profile; NVML reports the GPUs' health itself", healthEvents)
			}
			// What this node publishes is checked before the cluster is asked
			// anything: a bad profile or layout is the flags' fault.
			var inv *inventory.Node
			switch discovery {
			case "nvml":
				// NVML reads the node's GPUs and their MIG instances as they
				// are; a profile or layout given beside it would be ignored.
				if profile != "" {
					return fmt.Errorf("--profile: %q is for --discovery profile; NVML discovers the node's GPUs (drop --profile, or add --discovery profile)", profile)
				}
				if len(migLayout) > 0 {
					return fmt.Errorf("--mig-layout: %q is for --discovery profile; with NVML the GPUs' MIG instances are what the node has", strings.Join(migLayout, ","))
				}
			case "profile":
				c := catalog.MustDefault()
				p, err := profiles.Lookup(c, profile)
				if err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
				if inv, err = profiles.Discover(c, p, profiles.Node{Name: nodeName, MIGLayout: migLayout}); err != nil {
					return err
				}
			default:
				return fmt.Errorf("--discovery: %q, want nvml or profile", discovery)
			}
			// The kubelet is told these paths and runs elsewhere: a relative
			// one would name another directory for it.
			for _, d := range []struct{ flag, dir, example string }{
				{"--plugin-dir", pluginDir, plugin.DefaultPluginDir},
				{"--registrar-dir", registrarDir, plugin.DefaultRegistrarDir},
				{"--cdi-dir", cdiDir, plugin.DefaultCDIDir},
			} {
				if d.dir != "" && !filepath.IsAbs(d.dir) {
					return fmt.Errorf("%s: %q is relative; give an absolute host path, e.g. %s", d.flag, d.dir, d.example)
				}
			}
			if healthzAddr != "" {
				if err := listenaddr.Check("--healthz-addr", healthzAddr, ":51515"); err != nil {
					return err
				}
			}
			client, err := kubeclient.Clientset(kubeconfig)
			if err != nil {
				return err
			}
			// Node labels opt a node pool in or out of features (shared GPUs on one pool only).
			node, err := client.CoreV1().Nodes().Get(cmd.Context(), nodeName, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("node %s: %w", nodeName, err)
			}
			if f, err = plugin.FeaturesForNode(node, f); err != nil {
				return err
			}
			cfg := plugin.Config{NodeName: nodeName, Client: client, Features: f,
				PluginDir: pluginDir, RegistrarDir: registrarDir, CDIDir: cdiDir}
			switch discovery {
			case "nvml":
				lib := nvml.New()
				cfg.Discoverer = &nvmldiscovery.Discoverer{Lib: lib, Catalog: catalog.MustDefault(), Fabric: f.NVLinkDomains}
				cfg.Partitioner = &nvmldiscovery.Partitioner{Lib: lib}
				cfg.Health = &nvmldiscovery.Health{Lib: lib}
			case "profile":
				cfg.Discoverer = profiles.Static{Node: inv}
				// The fake GPUs keep their dynamic partitions across driver
				// restarts in the plugin folder, as real GPUs keep theirs.
				cfg.Partitioner = &profiles.Partitioner{Node: nodeName, Inv: inv,
					StateFile: filepath.Join(cmp.Or(pluginDir, plugin.DefaultPluginDir), profiles.PartitionStateFile)}
				if healthEvents != "" {
					cfg.Health = &healthfile.Source{Path: healthEvents, Inv: inv}
				}
			}

			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background())
			// Bind the health endpoint first: a busy port fails the start.
			var ln net.Listener
			if healthzAddr != "" {
				if ln, err = net.Listen("tcp", healthzAddr); err != nil {
					return fmt.Errorf("--healthz-addr: %w", err)
				}
			}
			d, err := plugin.Start(ctx, cfg)
			if err != nil {
				if ln != nil {
					ln.Close()
				}
				return err
			}
			defer d.Stop()
			if ln != nil {
				srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
					IdleTimeout: 30 * time.Second, MaxHeaderBytes: 8 << 10, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
						if d.Published() == nil {
							http.Error(w, "no devices published", http.StatusServiceUnavailable)
							return
						}
						_, _ = io.WriteString(w, "ok\n")
					})}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
			}
			klog.FromContext(ctx).Info("kubelet plugin running", "driver", plugin.DriverName, "node", nodeName,
				"devices", len(d.Published().Devices), "healthz", healthzAddr)
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG)")
	cmd.Flags().StringVar(&nodeName, "node-name", "", "this node's name (default $NODE_NAME)")
	cmd.Flags().StringVar(&discovery, "discovery", "nvml", "device discovery: nvml or profile")
	cmd.Flags().StringVar(&profile, "profile", "", "device profile for --discovery profile (see `dra-driver profiles`)")
	cmd.Flags().StringSliceVar(&migLayout, "mig-layout", nil, "static MIG instances on every GPU of a profile node, e.g. 3g.40gb,4g.40gb")
	cmd.Flags().StringVar(&pluginDir, "plugin-dir", "", "socket and checkpoint directory (default /var/lib/kubelet/plugins/gpu.gpuplane.io)")
	cmd.Flags().StringVar(&registrarDir, "registrar-dir", "", "kubelet plugin registration directory (default /var/lib/kubelet/plugins_registry)")
	cmd.Flags().StringVar(&cdiDir, "cdi-dir", "", "CDI spec directory (default /var/run/cdi)")
	cmd.Flags().StringVar(&healthEvents, "health-events", "", `--discovery profile: follow this file of health events, one JSON object a line, e.g. {"uuid": "GPU-...", "healthy": false, "reason": "XID 79"}`)
	cmd.Flags().StringVar(&healthzAddr, "healthz-addr", "", "serve /healthz for a liveness probe on this address, e.g. :51515 in a pod (default: off)")
	featureFlags(cmd, &f)
	return cmd
}
