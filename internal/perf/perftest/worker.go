package perftest

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Worker is cfg's worker for the catalog's model and whole gpu (named as
// the catalog names them) on the embedded parameters, or params when given.
func Worker(t testing.TB, model, gpu string, cfg perf.Config, params ...*perf.Params) *perf.Worker {
	t.Helper()
	c := catalog.MustDefault()
	m, err := c.Model(model)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Device(gpu, "")
	if err != nil {
		t.Fatal(err)
	}
	p := perf.MustDefaultParams()
	if len(params) > 0 {
		p = params[0]
	}
	cfg.Model, cfg.Device = m, d
	w, err := perf.NewWorker(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
