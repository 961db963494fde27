package devicepool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// FuzzSelector: any selector a spec carries (CEL text, up to the CRD's
// 2048 characters) builds a pool or fails naming the field; nothing
// panics or runs away.
func FuzzSelector(f *testing.F) {
	s := snapshot(f, "  features: {dynamicMIG: true}\n  nodePools:\n  - {name: h, profile: hgx-h100, count: 1, gpus: 2}\n")
	cat := catalog.MustDefault()
	f.Add(`device.attributes["gpu.gpuplane.io"].productName == "NVIDIA H100 80GB HBM3"`)
	f.Add(`device.capacity["gpu.gpuplane.io"].memory.compareTo(quantity("10Gi")) >= 0`)
	f.Add(`device.attributes[`)
	f.Add(`[1,2,3].all(x, [1,2,3].all(y, [1,2,3].all(z, x < y)))`)
	f.Fuzz(func(t *testing.T, sel string) {
		if len(sel) > 2048 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := Build(ctx, cat, s, Filter{Classes: allClasses.Classes, Selector: sel, SelectorField: "spec.devices.selector"})
		if err != nil && !strings.HasPrefix(err.Error(), "spec.devices.selector") {
			t.Fatalf("error %q does not name the field", err)
		}
	})
}
