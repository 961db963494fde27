package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gpuplane/gpuplane/internal/manifest"
	"github.com/gpuplane/gpuplane/internal/operator/controller"
	"github.com/gpuplane/gpuplane/internal/operator/crds"
	"github.com/gpuplane/gpuplane/internal/testcluster"
)

// startController installs the CRDs on the dev cluster, runs the
// controller in this process, and plays the container runtime for the
// pods of gpuplane's image with this binary. It returns the stop function.
func startController(ctx context.Context, g *globals, c *testcluster.Cluster) (func(), error) {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	if err := crds.Install(ctx, dyn, time.Minute); err != nil {
		return nil, err
	}
	env, err := g.env()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary for the pod runner: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(g.stderr)))
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(cctx, c.Config, env, controller.Options{MetricsAddr: "127.0.0.1:8082", HealthAddr: "0",
			FrontendImage: manifest.DefaultGPUPlaneImage})
	}()
	runner := &testcluster.PodRunner{Client: c.Client, Bin: self, Command: testcluster.GPUPlanePods(c.Kubeconfig),
		OnError: func(err error) { g.log.Error("pod runner", "err", err) }}
	rdone := make(chan struct{})
	go func() { runner.Run(cctx); close(rdone) }()
	fmt.Fprintln(g.stdout, "controller running (metrics on http://127.0.0.1:8082/metrics); pods of gpuplane's image run as local processes")
	return func() {
		cancel()
		<-rdone
		runner.Stop()
		if err := <-done; err != nil {
			g.log.Error("controller", "err", err)
		}
	}, nil
}
