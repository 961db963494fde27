package cli

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/operator/controller"
	"github.com/gpuplane/gpuplane/internal/operator/devicepool"
)

// clusterPool reads the devices the cluster has free, as the controller
// does, and returns them as configure's pool and the physical GPUs they
// sit on.
func (g *globals) clusterPool(f *configureFlags) ([]configure.PoolEntry, int, error) {
	cs, err := kubeclient.Clientset(f.kubeconfig)
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var snap devicepool.Snapshot
	slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: list ResourceSlices: %w", err)
	}
	classes, err := cs.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: list DeviceClasses: %w", err)
	}
	claims, err := cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: list ResourceClaims: %w", err)
	}
	snap.Slices, snap.Classes, snap.Claims = slices.Items, classes.Items, claims.Items
	env, err := g.env()
	if err != nil {
		return nil, 0, err
	}
	names := f.classes
	if len(names) == 0 {
		names = controller.DefaultClasses("gpuplane")
	}
	pool, err := devicepool.Build(ctx, env.Catalog, snap, devicepool.Filter{Classes: names, Selector: f.selector})
	if err != nil {
		return nil, 0, fmt.Errorf("--pool-from-cluster: %w", err)
	}
	if len(pool.Kinds) == 0 {
		return nil, 0, fmt.Errorf("--pool-from-cluster: no free device matches (classes %v, selector %q); see gpuplane explain capacity", names, f.selector)
	}
	fmt.Fprintf(g.stderr, "pool from the cluster: %s\n", pool)
	return pool.Entries(), pool.GPUs, nil
}
