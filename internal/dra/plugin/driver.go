// Package plugin is gpuplane's DRA kubelet plugin: it discovers the node's
// GPUs, publishes them as ResourceSlices, prepares and unprepares claims
// through the kubelet's gRPC API (CDI specs, a versioned checkpoint, device
// status on the claim) and taints devices that turn unhealthy.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

// DriverName is the DRA driver's name and its attribute domain.
const DriverName = "gpu.gpuplane.io"

// DefaultPluginDir is where the plugin keeps its socket and checkpoint
// unless told otherwise.
var DefaultPluginDir = filepath.Join(kubeletplugin.KubeletPluginsDir, DriverName)

// DefaultRegistrarDir and DefaultCDIDir are where the kubelet looks for
// registration sockets and the container runtime for CDI specs.
const (
	DefaultRegistrarDir = kubeletplugin.KubeletRegistryDir
	DefaultCDIDir       = kubeletplugin.DefaultCDIDir
)

// Discoverer reads the node's GPUs (NVML on a GPU node, a profile on a fake one).
type Discoverer interface {
	Discover() (*inventory.Node, error)
}

// Partitioner creates and destroys MIG partitions for dynamic MIG.
type Partitioner interface {
	// Create makes a partition of profile at placement start on the GPU and
	// returns the MIG device's UUID.
	Create(gpuUUID, profile string, start int) (string, error)
	Destroy(gpuUUID, profile string, start int) error
}

// HealthEvent says a GPU or MIG device turned unhealthy or recovered.
type HealthEvent struct {
	UUID    string
	Healthy bool
	Reason  string
}

// HealthSource streams health events until ctx ends.
type HealthSource interface {
	Watch(ctx context.Context) (<-chan HealthEvent, error)
}

// Config sets up a plugin.
type Config struct {
	NodeName   string
	Client     kubernetes.Interface
	Discoverer Discoverer
	// Partitioner is required when Features.DynamicMIG is on.
	Partitioner Partitioner
	Health      HealthSource
	Features    slices.Features
	// PluginDir holds the plugin's socket and checkpoint (default
	// /var/lib/kubelet/plugins/gpu.gpuplane.io); RegistrarDir the kubelet's
	// registration sockets; CDIDir the CDI specs (default /var/run/cdi).
	PluginDir, RegistrarDir, CDIDir string
}

// Driver is a running plugin.
type Driver struct {
	cfg    Config
	helper *kubeletplugin.Helper
	cdi    *cdi.Cache
	ckpt   string
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	inv       *inventory.Node
	published *slices.Result
	unhealthy map[string]string
	prepared  map[types.UID]PreparedClaim
	// tornDown marks claims whose devices were freed but whose removal
	// from the checkpoint has not reached the disk yet.
	tornDown  map[types.UID]bool
	orphans   []string      // partitions found at start that no claim holds
	healthGen chan struct{} // closed and replaced when health changes

	// store and writeSpec persist the checkpoint and a claim's CDI spec;
	// tests replace them to inject failures.
	store     func(path string, claims map[types.UID]PreparedClaim) error
	writeSpec func(cache *cdi.Cache, claim types.UID, devs []PreparedDevice) ([]string, error)
}

// Start discovers the node, restores the checkpoint, starts the kubelet
// plugin's gRPC services and publishes the node's slices.
func Start(ctx context.Context, cfg Config) (*Driver, error) {
	if cfg.NodeName == "" || cfg.Client == nil || cfg.Discoverer == nil {
		return nil, errors.New("plugin: node name, client and discoverer are required")
	}
	if cfg.Features.DynamicMIG && cfg.Partitioner == nil {
		return nil, errors.New("plugin: dynamic MIG needs a partitioner")
	}
	if cfg.PluginDir == "" {
		cfg.PluginDir = DefaultPluginDir
	}
	if cfg.CDIDir == "" {
		cfg.CDIDir = DefaultCDIDir
	}
	for _, d := range []string{cfg.PluginDir, cfg.CDIDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("plugin: %w", err)
		}
	}
	inv, err := cfg.Discoverer.Discover()
	if err != nil {
		return nil, fmt.Errorf("discover devices: %w", err)
	}
	d := &Driver{cfg: cfg, inv: inv, unhealthy: map[string]string{}, healthGen: make(chan struct{}),
		ckpt: filepath.Join(cfg.PluginDir, "checkpoint.json"), tornDown: map[types.UID]bool{}, store: writeCheckpoint, writeSpec: writeCDI}
	if d.prepared, err = readCheckpoint(d.ckpt); err != nil {
		return nil, err
	}
	if cfg.Partitioner != nil {
		d.reconcile(ctx)
	}
	if d.cdi, err = cdi.NewCache(cdi.WithSpecDirs(cfg.CDIDir), cdi.WithAutoRefresh(false)); err != nil {
		return nil, fmt.Errorf("cdi cache: %w", err)
	}
	if d.published, err = slices.Build(inv, cfg.Features, nil); err != nil {
		return nil, err
	}
	ctx, d.cancel = context.WithCancelCause(ctx)
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(DriverName), kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(cfg.Client), kubeletplugin.PluginDataDirectoryPath(cfg.PluginDir),
		kubeletplugin.CDIDirectory(cfg.CDIDir),
	}
	if cfg.RegistrarDir != "" {
		opts = append(opts, kubeletplugin.RegistrarDirectoryPath(cfg.RegistrarDir))
	}
	if d.helper, err = kubeletplugin.Start(ctx, d, opts...); err != nil {
		return nil, fmt.Errorf("start kubelet plugin: %w", err)
	}
	if err := d.publish(ctx); err != nil {
		d.Stop()
		return nil, err
	}
	if cfg.Health != nil {
		events, err := cfg.Health.Watch(ctx)
		if err != nil {
			d.Stop()
			return nil, fmt.Errorf("health: %w", err)
		}
		go d.watchHealth(ctx, events)
	}
	return d, nil
}

// Stop shuts the gRPC services down; prepared claims stay in the checkpoint.
func (d *Driver) Stop() {
	d.cancel(errors.New("plugin stopped"))
	d.helper.Stop()
}

// Published is the current layout (for tests and status).
func (d *Driver) Published() *slices.Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.published
}

func (d *Driver) publish(ctx context.Context) error {
	d.mu.Lock()
	r := d.published
	d.mu.Unlock()
	return d.helper.PublishResources(ctx, resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{d.cfg.NodeName: {Slices: r.Slices}}})
}

// HandleError is called for background errors (publishing slices). Dropped
// fields mean the cluster lacks a feature the driver was told to use: that
// is fatal, the driver would otherwise advertise devices it cannot honour.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	logger := klog.FromContext(ctx)
	var dropped *resourceslice.DroppedFieldsError
	if errors.As(err, &dropped) {
		logger.Error(err, "the cluster dropped fields of a ResourceSlice; turn off the driver feature that needs them",
			"disabledFeatures", dropped.DisabledFeatures())
		d.cancel(err)
		return
	}
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		logger.Error(err, msg, "fatal", true)
		d.cancel(err)
		return
	}
	logger.Error(err, msg)
}
