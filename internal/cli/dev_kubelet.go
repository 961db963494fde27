package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuplane/gpuplane/internal/dra/fleet"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/testcluster"
)

// startKubeletNode starts the real kubelet node, installs the driver's
// DeviceClasses, and writes and prints the command that runs the DRA
// driver on the node, for a person to start, stop and restart by hand.
func startKubeletNode(ctx context.Context, g *globals, c *testcluster.Cluster) (*testcluster.Kubelet, error) {
	k, err := c.StartKubelet(ctx, testcluster.KubeletOptions{Name: "kubelet-0"})
	if err != nil {
		return nil, fmt.Errorf("--kubelet: %w", err)
	}
	if err := fleet.InstallClasses(ctx, c.Client, plugin.DriverName); err != nil {
		k.Stop()
		return nil, fmt.Errorf("--kubelet: %w", err)
	}
	state := k.StateDir
	script := filepath.Join(state, "run-dra-driver.sh")
	if err := os.WriteFile(script, []byte(driverScript(c.Kubeconfig, k)), 0o755); err != nil {
		k.Stop()
		return nil, fmt.Errorf("--kubelet: %w", err)
	}
	fmt.Fprintf(g.stdout, "kubelet node %s ready; the containers it runs are recorded in %s\n"+
		"run the DRA driver on it (flags after the script's name are added, e.g. --profile hgx-h100 --dynamic-mig):\n  bash %s --profile hgx-h100\n",
		k.Name, filepath.Join(state, "containers.json"), script)
	return k, nil
}

// driverScript runs gpuplane-dra-driver with the node's folders: the
// installed binary, $GPUPLANE_DRA_DRIVER, or go run from this checkout.
func driverScript(kubeconfig string, k *testcluster.Kubelet) string {
	state := k.StateDir
	goRun := "gpuplane-dra-driver"
	if root := testcluster.RepoRoot(); root != "" {
		goRun = "go run " + filepath.Join(root, "cmd", "gpuplane-dra-driver")
	}
	flags := []string{"run", "--kubeconfig=" + kubeconfig, "--node-name=" + k.Name, "--discovery=profile",
		"--plugin-dir=" + filepath.Join(k.PluginsDir, plugin.DriverName), "--registrar-dir=" + k.RegistrarDir,
		"--cdi-dir=" + filepath.Join(state, "cdi"), "--health-events=" + filepath.Join(state, "health.jsonl")}
	return fmt.Sprintf(`#!/usr/bin/env bash
# Runs gpuplane's DRA driver on the dev cluster's kubelet node (written by
# gpuplane dev cluster up --kubelet). Append a health event to mark a GPU
# unhealthy: echo '{"uuid": "GPU-...", "healthy": false, "reason": "XID 79"}' >> %s
set -euo pipefail
driver="${GPUPLANE_DRA_DRIVER:-}"
if [[ -z "$driver" ]]; then
  if command -v gpuplane-dra-driver >/dev/null; then driver=gpuplane-dra-driver; else driver=%q; fi
fi
exec $driver %s "$@"
`, filepath.Join(state, "health.jsonl"), goRun, strings.Join(flags, " "))
}
