package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/operator/controller"
	"github.com/gpuplane/gpuplane/internal/operator/devicepool"
)

// clusterPool reads the devices the cluster has free, as the controller
// does, and returns them as configure's pool and the physical GPUs they
// sit on.
func (g *globals) clusterPool(f *configureFlags) ([]configure.PoolEntry, int, error) {
	cfg, err := kubeclient.Config(f.kubeconfig)
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: %w", err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		return nil, 0, err
	}
	// controller-runtime's client logs through its own logger: the CLI's.
	ctrllog.SetLogger(logr.FromSlogHandler(g.log.Handler()))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := controller.ReadDevices(ctx, c, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: %w", err)
	}
	env, err := g.env()
	if err != nil {
		return nil, 0, err
	}
	names := f.classes
	if len(names) == 0 {
		names = controller.DefaultClasses("gpuplane")
	}
	pool, err := devicepool.Build(ctx, env.Catalog, snap, devicepool.Filter{Classes: names, Selector: f.selector,
		ClassesField: "--device-classes", SelectorField: "--device-selector"})
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: %w", err)
	}
	if len(pool.Kinds) == 0 {
		return nil, 0, fmt.Errorf("--pool-from-cluster: no free device matches (classes %v, selector %q); see gpuplane explain capacity", names, f.selector)
	}
	fmt.Fprintf(g.stderr, "pool from the cluster: %s\n", pool)
	return pool.Entries(), pool.GPUs, nil
}
