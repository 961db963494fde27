package calibrate

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// The API-server share search over a few runs of each backend: what it
// keeps is what it writes, and a share outside [0, 1] is an error.
func TestFitFrontend(t *testing.T) {
	ds, env := loadShared(t)
	cases := firstPerBackend(ServingCases(ds.Cases), 3)
	if len(cases) == 0 {
		t.Skip("no serving runs in the shared data")
	}
	res, err := FitTerm(env, cases, FrontendTerm, []float64{0, 0.5, 1}, []string{"campaign"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTermWrites(t, res, env, func(bp *perf.BackendParams) float64 { return bp.FrontendParallel })
	if _, err := FitTerm(env, cases, FrontendTerm, []float64{0, 1.5}, []string{"campaign"}, nil); err == nil || !strings.Contains(err.Error(), "must be in [0, 1]") {
		t.Errorf("share 1.5: %v", err)
	}
}
