package cli

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/testcluster"
)

func newDevCmd(g *globals) *cobra.Command {
	dev := &cobra.Command{Use: "dev", Short: "Developer tools: a local Kubernetes control plane"}
	cluster := &cobra.Command{Use: "cluster up|down", Short: "Run (up) or stop (down) the local control plane used by the e2e tests"}
	var dir, binDir string
	var gpuNodes int
	up := &cobra.Command{
		Use:   "up",
		Short: "Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on loopback; runs until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("--dir: %w", err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "pids")); err == nil && len(b) > 0 && alive(string(b)) {
				return fmt.Errorf("a cluster already runs from %s; stop it with: gpuplane dev cluster down --dir %s", dir, dir)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
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
			for i := 0; i < gpuNodes; i++ {
				if _, err := c.CreateGPUNode(ctx, testcluster.GPUNode{Name: fmt.Sprintf("gpu-node-%d", i),
					InstanceType: "Standard_NC80adis_H100_v5", NodePool: "h100", GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUs: 8}); err != nil {
					return err
				}
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
			if err != nil {
				return fmt.Errorf("no cluster recorded in %s (%w)", dir, err)
			}
			fields := strings.Fields(string(b))
			// The last pid is `up` itself: stopping it stops the components in order.
			for i := len(fields) - 1; i >= 0; i-- {
				if pid, err := strconv.Atoi(fields[i]); err == nil {
					_ = syscall.Kill(pid, syscall.SIGTERM)
				}
			}
			_ = os.Remove(filepath.Join(dir, "pids"))
			fmt.Fprintln(g.stdout, "stopped")
			return nil
		},
	}
	for _, c := range []*cobra.Command{up, down} {
		c.Flags().StringVar(&dir, "dir", filepath.Join(".cache", "dev-cluster"), "state folder (certificates, data, logs, kubeconfig)")
	}
	up.Flags().StringVar(&binDir, "bin-dir", "", "folder with the control-plane binaries (default: $GPUPLANE_BIN_DIR or .cache/bin)")
	up.Flags().IntVar(&gpuNodes, "gpu-nodes", 0, "fake 8-GPU nodes to create")
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
