// Package emulatetest starts emulated workers on loopback for tests of the
// packages that talk to inference servers (bench, frontend).
package emulatetest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/emulate"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Start serves an emulated Qwen3-8B on one H100 in role, named "m", until
// the test ends. It returns the base URL and the worker's metrics registry.
func Start(t testing.TB, role string) (string, *prometheus.Registry) {
	t.Helper()
	url, reg, _ := StartKillable(t, role)
	return url, reg
}

// StartKillable is Start with a kill function that makes the worker die
// as a crashed process does: every connection reset, nothing served after.
func StartKillable(t testing.TB, role string) (string, *prometheus.Registry, func()) {
	t.Helper()
	p, err := perf.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	q := estimate.Defaults()
	q.Model, q.GPU, q.TP = "Qwen/Qwen3-8B", "h100_sxm", 1
	reg := prometheus.NewRegistry()
	srv, err := emulate.New(estimate.Env{Catalog: catalog.MustDefault(), Params: p}, emulate.Config{Query: q, Role: role, ServedName: "m"}, reg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.RT.Run(ctx)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); cancel() })
	kill := func() {
		ts.Listener.Close()
		ts.CloseClientConnections()
	}
	return ts.URL, reg, kill
}
