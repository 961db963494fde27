package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/estimate"
)

// Options configure the controller process.
type Options struct {
	MetricsAddr, HealthAddr string
	LeaderElect             bool
	LeaderElectionNamespace string
	FrontendImage           string
}

// Scheme is the API types the controller reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Run starts the manager with the ServingDeployment controller and blocks
// until ctx ends. Metrics are served on the manager's registry.
func Run(ctx context.Context, cfg *rest.Config, env estimate.Env, o Options) error {
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	mo := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.HealthAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "gpuplane-controller.gpuplane.io",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		GracefulShutdownTimeout: ptrDuration(15 * time.Second),
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Env: env, Recorder: mgr.GetEventRecorder("gpuplane-controller"), FrontendImage: o.FrontendImage}
	if err := r.SetupWithManager(mgr, ctrlmetrics.Registry); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func ptrDuration(d time.Duration) *time.Duration { return &d }
