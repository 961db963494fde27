//go:build e2e

// Package e2e runs gpuplane against a real Kubernetes control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) on
// loopback. Run with: go test -tags e2e ./test/e2e/...
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuplane/gpuplane/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	// Clients built outside a manager log nothing the tests read; without a
	// logger controller-runtime prints a stack trace per client instead.
	ctrllog.SetLogger(logr.Discard())
	ctx := context.Background()
	t0 := time.Now()
	c, err := testcluster.Start(ctx, testcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start control plane:", err)
		os.Exit(1)
	}
	fmt.Printf("e2e: control plane ready in %s (%s)\n", time.Since(t0).Round(10*time.Millisecond), c.Kubeconfig)
	cluster = c
	code := m.Run()
	c.Stop()
	os.Exit(code)
}
