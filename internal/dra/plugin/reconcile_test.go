package plugin

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

// Partitions on the node that no checkpointed claim holds are reported;
// the one a claim holds is not.
func TestReconcileReportsOrphans(t *testing.T) {
	c := catalog.MustDefault()
	p, err := profiles.Lookup(c, "hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := profiles.Discover(c, p, profiles.Node{Name: "n", MIGLayout: []string{"3g.40gb"}})
	if err != nil {
		t.Fatal(err)
	}
	held := inv.GPUs[0]
	d := &Driver{cfg: Config{Partitioner: &profiles.Partitioner{Node: "n", Inv: inv}, Features: slices.Features{DynamicMIG: true}}, inv: inv,
		prepared: map[types.UID]PreparedClaim{"c1": {Devices: []PreparedDevice{{Dynamic: true, GPUUUID: held.UUID,
			Profile: held.MIG.Instances[0].Profile, Start: held.MIG.Instances[0].Start}}}}}
	d.reconcile(context.Background())
	if got := d.Orphans(); len(got) != len(inv.GPUs)-1 || strings.Contains(strings.Join(got, " "), held.UUID) {
		t.Errorf("orphans %v: want the %d partitions no claim holds", got, len(inv.GPUs)-1)
	}
}
