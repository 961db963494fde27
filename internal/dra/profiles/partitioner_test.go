package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

func h100Node(t *testing.T) *inventory.Node {
	t.Helper()
	c := catalog.MustDefault()
	p, err := Lookup(c, "hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Discover(c, p, Node{Name: "n", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// The partitions outlive the partitioner, as a GPU's outlive the driver:
// a new one over the same state file refuses an overlap, takes a
// checkpointed partition back as it is, and frees what is destroyed.
func TestPartitionStateSurvivesRestart(t *testing.T) {
	inv := h100Node(t)
	gpu := inv.GPUs[0].UUID
	state := filepath.Join(t.TempDir(), PartitionStateFile)
	p := &Partitioner{Node: "n", Inv: inv, StateFile: state}
	uuid, err := p.Create(gpu, "3g.40gb", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(gpu, "1g.10gb", 1); err == nil {
		t.Fatal("overlapping partition created")
	}

	again := &Partitioner{Node: "n", Inv: inv, StateFile: state}
	if _, err := again.Create(gpu, "1g.10gb", 2); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Fatalf("after a restart, an overlap: %v", err)
	}
	if err := again.Restore(gpu, "3g.40gb", 0); err != nil {
		t.Fatalf("restore of an existing partition: %v", err)
	}
	if got, _ := again.Partitions(); len(got) != 1 || got[0] != (Partition{GPU: gpu, Profile: "3g.40gb", Start: 0}) {
		t.Fatalf("partitions %+v", got)
	}
	if u2, err := again.Create(inv.GPUs[1].UUID, "3g.40gb", 0); err != nil || u2 == uuid {
		t.Fatalf("second GPU: %s %v (first %s)", u2, err, uuid)
	}
	if err := again.Destroy(gpu, "3g.40gb", 0); err != nil {
		t.Fatal(err)
	}
	left, err := ReadPartitions(state)
	if err != nil || len(left) != 1 || left[0].GPU != inv.GPUs[1].UUID {
		t.Fatalf("state file after destroy: %+v %v", left, err)
	}
	if _, err := again.Create(gpu, "1g.10gb", 2); err != nil {
		t.Errorf("freed slices not reusable: %v", err)
	}
}

func TestPartitionStateErrors(t *testing.T) {
	inv := h100Node(t)
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", "{", "partition state"},
		{"unknown GPU", `{"partitions": [{"gpu": "GPU-nope", "profile": "1g.10gb", "start": 0}]}`, "no GPU GPU-nope"},
		{"overlap", `{"partitions": [{"gpu": "` + inv.GPUs[0].UUID + `", "profile": "3g.40gb", "start": 0}, {"gpu": "` +
			inv.GPUs[0].UUID + `", "profile": "1g.10gb", "start": 1}]}`, "overlaps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			p := &Partitioner{Node: "n", Inv: inv, StateFile: path}
			if _, err := p.Create(inv.GPUs[1].UUID, "1g.10gb", 0); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// Destroying a partition that does not exist frees nothing: the slices of
// the one that does stay taken.
func TestDestroyOfAMissingPartitionKeepsOthers(t *testing.T) {
	inv := h100Node(t)
	gpu := inv.GPUs[0].UUID
	p := &Partitioner{Node: "n", Inv: inv}
	if _, err := p.Create(gpu, "3g.40gb", 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Destroy(gpu, "1g.10gb", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(gpu, "1g.10gb", 1); err == nil || !strings.Contains(err.Error(), "memory slice 1") {
		t.Errorf("a slice of the 3g.40gb partition was freed: %v", err)
	}
}
