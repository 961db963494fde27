package crds

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The chart ships the same CRDs the controller embeds.
func TestChartCarriesTheEmbeddedCRDs(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 || objs[0].GetName() != "servingdeployments.gpuplane.io" {
		t.Fatalf("embedded CRDs %v", objs)
	}
	entries, _ := files.ReadDir(".")
	for _, e := range entries {
		mine, _ := files.ReadFile(e.Name())
		chart, err := os.ReadFile(filepath.Join("../../../deploy/helm/gpuplane/crds", e.Name()))
		if err != nil || !bytes.Equal(mine, chart) {
			t.Errorf("deploy/helm/gpuplane/crds/%s differs from the embedded copy (run bash hack/gen-api.sh): %v", e.Name(), err)
		}
	}
}
