package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

var errDisk = errors.New("injected: disk full")

func failStore(string, map[types.UID]plugin.PreparedClaim) error { return errDisk }

func failSpec(*cdi.Cache, types.UID, []plugin.PreparedDevice) ([]string, error) { return nil, errDisk }

// A CDI spec that cannot be written must not leave the dynamic MIG
// partition behind: the same placement prepares once the disk is back.
func TestFailedCDIWriteUndoesThePartition(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{DynamicMIG: true})
	ctx := context.Background()
	plugin.InjectFaults(r.driver, nil, failSpec)
	c := r.claim("mig", "", dev("gpu-0-mig-3g-40gb-4"))
	res, err := r.kubelet.Prepare(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res["uid-mig"].Error, "injected") {
		t.Fatalf("want the CDI error, got %+v", res["uid-mig"])
	}
	plugin.InjectFaults(r.driver, nil, nil)
	if res, _ := r.kubelet.Prepare(ctx, c); res["uid-mig"].Error != "" {
		t.Errorf("the placement stayed taken after the failed prepare: %s", res["uid-mig"].Error)
	}
}

// A checkpoint that cannot be written means nothing was prepared: the
// kubelet gets an error, memory, CDI specs and partitions are as before,
// and the retry prepares for real (and survives a restart).
func TestFailedCheckpointUndoesThePrepare(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{DynamicMIG: true})
	ctx := context.Background()
	plugin.InjectFaults(r.driver, failStore, nil)
	c := r.claim("mig", "", dev("gpu-0-mig-3g-40gb-4"))
	res, err := r.kubelet.Prepare(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res["uid-mig"].Error, "undone") {
		t.Fatalf("want an error saying the prepare was undone, got %+v", res["uid-mig"])
	}
	if n := len(r.driver.Prepared()); n != 0 {
		t.Errorf("%d claims in memory after a failed checkpoint", n)
	}
	if m, _ := filepath.Glob(filepath.Join(r.cfg.CDIDir, "*")); len(m) != 0 {
		t.Errorf("CDI specs left: %v", m)
	}
	plugin.InjectFaults(r.driver, nil, nil)
	if res, _ := r.kubelet.Prepare(ctx, c); res["uid-mig"].Error != "" {
		t.Fatalf("retry: %s", res["uid-mig"].Error)
	}
	r.restart()
	if _, ok := r.driver.Prepared()["uid-mig"]; !ok {
		t.Error("the retried prepare is not in the checkpoint after a restart")
	}
}

// Unprepare frees the devices; if the checkpoint then cannot be written
// the claim stays known, and the retry only writes the checkpoint.
func TestFailedCheckpointOnUnprepareRetries(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{DynamicMIG: true})
	ctx := context.Background()
	c := r.claim("mig", "", dev("gpu-0-mig-3g-40gb-4"))
	if res, _ := r.kubelet.Prepare(ctx, c); res["uid-mig"].Error != "" {
		t.Fatal(res["uid-mig"].Error)
	}
	plugin.InjectFaults(r.driver, failStore, nil)
	un, err := r.kubelet.Unprepare(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(un["uid-mig"].Error, "injected") {
		t.Fatalf("want the checkpoint error, got %+v", un["uid-mig"])
	}
	if _, ok := r.driver.Prepared()["uid-mig"]; !ok {
		t.Error("the claim left memory before the checkpoint without it was written")
	}
	plugin.InjectFaults(r.driver, nil, nil)
	if un, _ := r.kubelet.Unprepare(ctx, c); un["uid-mig"].Error != "" {
		t.Fatalf("retry: %s", un["uid-mig"].Error)
	}
	if len(r.driver.Prepared()) != 0 {
		t.Error("the claim is still prepared after the retry")
	}
	// The placement is free again.
	c2 := r.claim("mig2", "", dev("gpu-0-mig-3g-40gb-4"))
	if res, _ := r.kubelet.Prepare(ctx, c2); res["uid-mig2"].Error != "" {
		t.Errorf("placement not freed: %s", res["uid-mig2"].Error)
	}
}

// A corrupt checkpoint stops the plugin with a way out.
func TestCorruptCheckpointSaysHowToRecover(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{})
	r.kubelet.Close()
	r.driver.Stop()
	if err := os.WriteFile(filepath.Join(r.cfg.PluginDir, "checkpoint.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := plugin.Start(context.Background(), r.cfg); err == nil || !strings.Contains(err.Error(), "to recover") {
		t.Errorf("got %v, want an error saying how to recover", err)
	}
}

// A plugin restarted with a fresh partitioner still knows the partitions
// its checkpoint holds: an overlapping one is refused.
func TestRestartRestoresCheckpointedPartitions(t *testing.T) {
	r := newRig(t, "hgx-h100", slices.Features{DynamicMIG: true})
	ctx := context.Background()
	if res, _ := r.kubelet.Prepare(ctx, r.claim("mig", "", dev("gpu-0-mig-3g-40gb-4"))); res["uid-mig"].Error != "" {
		t.Fatal(res["uid-mig"].Error)
	}
	inv := nodeInventory(t, "hgx-h100")
	r.cfg.Partitioner = &profiles.Partitioner{Node: node, Inv: inv} // what a restarted process has
	r.restart()
	res, _ := r.kubelet.Prepare(ctx, r.claim("over", "", dev("gpu-0-mig-2g-20gb-4")))
	if !strings.Contains(res["uid-over"].Error, "overlaps") {
		t.Errorf("an overlapping partition after a restart: %+v", res["uid-over"])
	}
	if len(r.driver.Orphans()) != 0 {
		t.Errorf("orphans reported on a clean node: %v", r.driver.Orphans())
	}
}
