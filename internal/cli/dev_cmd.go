package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/testcluster"
)

func newDevCmd(g *globals) *cobra.Command {
	dev := &cobra.Command{Use: "dev", Short: "Developer tools: a local Kubernetes control plane"}
	cluster := &cobra.Command{Use: "cluster up|down", Short: "Run (up) or stop (down) the local control plane used by the e2e tests"}
	var dir, binDir, gpuProfile string
	var gpuNodes int
	var noBuild, purge, withController, withKubelet bool
	up := &cobra.Command{
		Use:   "up",
		Short: "Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on loopback; runs until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := filepath.Abs(dir)
			if err != nil {
				return fmt.Errorf("--dir: %w", err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("--dir: %w", err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "pids")); err == nil && len(b) > 0 && alive(string(b)) {
				return fmt.Errorf("a cluster already runs from %s; stop it with: gpuplane dev cluster down --dir %s", dir, dir)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if binDir == "" {
				binDir = testcluster.DefaultBinDir()
			}
			if withKubelet {
				if err := testcluster.CheckKubeletRoot(); err != nil {
					return fmt.Errorf("--kubelet: %w", err)
				}
			}
			err = testcluster.CheckBinaries(binDir)
			if err == nil && withKubelet {
				err = testcluster.CheckKubelet(binDir)
			}
			if err != nil {
				if noBuild {
					return err
				}
				// A fresh clone has none: build them rather than stop.
				if err := testcluster.BuildBinaries(ctx, binDir, g.stderr, 30*time.Second); err != nil {
					return err
				}
			}
			t0 := time.Now()
			c, err := testcluster.Start(ctx, testcluster.Options{BinDir: binDir, Dir: dir})
			if err != nil {
				return err
			}
			defer c.Stop()
			pids := make([]string, 0, 8)
			for _, p := range c.PIDs() {
				pids = append(pids, strconv.Itoa(p))
			}
			pids = append(pids, strconv.Itoa(os.Getpid()))
			_ = os.WriteFile(filepath.Join(dir, "pids"), []byte(strings.Join(pids, " ")), 0o644)
			if gpuNodes > 0 {
				// GPU nodes publish their devices as the driver would, with its classes installed.
				running, err := publishGPUNodes(ctx, c, gpuProfile, gpuNodes)
				if err != nil {
					return err
				}
				defer running.Stop()
			}
			if withController {
				// The CRD, the controller, and a stand-in runtime that runs the
				// pods of gpuplane's image (router, emulated engines) on their IPs.
				stopCtl, err := startController(ctx, g, c)
				if err != nil {
					return err
				}
				defer stopCtl()
			}
			if withKubelet {
				k, err := startKubeletNode(ctx, g, c)
				if err != nil {
					return err
				}
				defer k.Stop()
				pids = append(pids[:len(pids)-1], strconv.Itoa(k.PID()), strconv.Itoa(os.Getpid()))
				_ = os.WriteFile(filepath.Join(dir, "pids"), []byte(strings.Join(pids, " ")), 0o644)
			}
			g.log.Info("cluster ready", "seconds", time.Since(t0).Seconds())
			fmt.Fprintf(g.stdout, "control plane ready in %s\nexport KUBECONFIG=%s\n(interrupt to stop; logs in %s)\n",
				time.Since(t0).Round(time.Millisecond), c.Kubeconfig, filepath.Join(dir, "logs"))
			<-ctx.Done()
			_ = os.Remove(filepath.Join(dir, "pids"))
			return nil
		},
	}
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop a cluster started with `dev cluster up` from another shell",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := os.ReadFile(filepath.Join(dir, "pids"))
			switch {
			case err == nil:
				fields := strings.Fields(string(b))
				// The last pid is `up` itself: stopping it stops the components in order.
				var pids []int
				for i := len(fields) - 1; i >= 0; i-- {
					if pid, err := strconv.Atoi(fields[i]); err == nil {
						pids = append(pids, pid)
						_ = syscall.Kill(pid, syscall.SIGTERM)
					}
				}
				waitGone(pids, 30*time.Second)
				_ = os.Remove(filepath.Join(dir, "pids"))
				fmt.Fprintln(g.stdout, "stopped")
			case !purge:
				return fmt.Errorf("no cluster recorded in %s (%w)", dir, err)
			}
			if purge {
				// etcd's data, certificates, kubeconfig and logs: the next up starts empty.
				if err := os.RemoveAll(dir); err != nil {
					return fmt.Errorf("--purge: %w", err)
				}
				fmt.Fprintf(g.stdout, "removed %s\n", dir)
			}
			return nil
		},
	}
	for _, c := range []*cobra.Command{up, down} {
		c.Flags().StringVar(&dir, "dir", filepath.Join(".cache", "dev-cluster"), "state folder (certificates, data, logs, kubeconfig)")
	}
	up.Flags().StringVar(&binDir, "bin-dir", "", "folder with the control-plane binaries (default: $GPUPLANE_BIN_DIR or .cache/bin)")
	up.Flags().IntVar(&gpuNodes, "gpu-nodes", 0, "fake GPU nodes to create; they publish their devices as ResourceSlices of gpu.gpuplane.io")
	up.Flags().StringVar(&gpuProfile, "gpu-profile", "hgx-h100", "device profile of the --gpu-nodes (see: gpuplane dra-driver profiles)")
	up.Flags().BoolVar(&withController, "controller", false, "install the ServingDeployment CRD, run the controller, and run the pods of gpuplane's image (router, emulate backend) as local processes")
	up.Flags().BoolVar(&withKubelet, "kubelet", false, "also run a real kubelet as node kubelet-0 (needs root), with a container runtime that records what each container gets; run the DRA driver on it with the printed command")
	up.Flags().BoolVar(&noBuild, "no-build", false, "fail when the control-plane binaries are missing instead of building them")
	down.Flags().BoolVar(&purge, "purge", false, "also delete the state folder (etcd data, certificates, kubeconfig, logs)")
	cluster.AddCommand(up, down)
	dev.AddCommand(cluster)
	return dev
}

func alive(pids string) bool {
	f := strings.Fields(pids)
	if len(f) == 0 {
		return false
	}
	pid, err := strconv.Atoi(f[len(f)-1])
	return err == nil && syscall.Kill(pid, 0) == nil
}

// waitGone waits until none of pids runs, at most timeout.
func waitGone(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		alive := false
		for _, p := range pids {
			alive = alive || syscall.Kill(p, 0) == nil
		}
		if !alive {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// publishGPUNodes registers n kwok GPU nodes of a device profile and
// publishes their slices, with the driver's DeviceClasses.
func publishGPUNodes(ctx context.Context, c *testcluster.Cluster, profile string, n int) (*fleet.Running, error) {
	f := &fleet.File{APIVersion: fleet.APIVersion, Kind: fleet.Kind, Spec: fleet.Spec{
		NodePools: []fleet.NodePool{{Name: "gpu-node", Profile: profile, Count: n}}}}
	nodes, err := f.Nodes(catalog.MustDefault())
	if err != nil {
		return nil, fmt.Errorf("--gpu-profile: %w", err)
	}
	pub := &fleet.Publisher{Client: c.Client, Driver: plugin.DriverName, CreateNodes: true, InstallClasses: true}
	running, err := pub.Start(ctx, nodes)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := running.WaitPublished(wctx); err != nil {
		running.Stop()
		return nil, err
	}
	return running, nil
}
