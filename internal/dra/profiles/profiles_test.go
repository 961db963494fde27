package profiles

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

func TestProfiles(t *testing.T) {
	c := catalog.MustDefault()
	cases := []struct {
		profile  string
		gpus     int
		product  string
		fraction string
		memGiB   float64
		mig      bool
	}{
		{"azure-nv6ads-a10-v5", 1, "NVIDIA A10", "1/6", 4, false},
		{"azure-nv12ads-a10-v5", 1, "NVIDIA A10", "1/3", 8, false},
		{"azure-nv18ads-a10-v5", 1, "NVIDIA A10", "1/2", 12, false},
		{"azure-nv36ads-a10-v5", 1, "NVIDIA A10", "1", 24, false},
		{"gcp-g4-standard-12", 1, "NVIDIA RTX PRO 6000 Blackwell Server Edition", "1/4", 22.4, false},
		{"hgx-h100", 8, "NVIDIA H100 80GB HBM3", "", 79.6, true},
		{"hgx-h200", 8, "NVIDIA H200", "", 140.4, true},
		{"hgx-a100-80gb", 8, "NVIDIA A100-SXM4-80GB", "", 79.3, true},
		{"gb200-nvl72", 4, "NVIDIA GB200", "", 185, false},
	}
	for _, tc := range cases {
		p, err := Lookup(c, tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := Discover(c, p, Node{Name: "n1", NVLinkDomain: "rack-1", CliqueID: 2})
		if err != nil {
			t.Fatalf("%s: %v", tc.profile, err)
		}
		if len(inv.GPUs) != tc.gpus {
			t.Errorf("%s: %d GPUs, want %d", tc.profile, len(inv.GPUs), tc.gpus)
		}
		g := inv.GPUs[0]
		if g.ProductName != tc.product || g.MemoryBytes != int64(tc.memGiB*(1<<30)) || (g.MIG != nil) != tc.mig {
			t.Errorf("%s: %s %d bytes mig=%v", tc.profile, g.ProductName, g.MemoryBytes, g.MIG != nil)
		}
		if (g.VGPU == nil) != (tc.fraction == "") || g.VGPU != nil && g.VGPU.Fraction != tc.fraction {
			t.Errorf("%s: vgpu %+v, want fraction %q", tc.profile, g.VGPU, tc.fraction)
		}
		if (tc.profile == "gb200-nvl72") != (g.NVLink != nil) {
			t.Errorf("%s: nvlink %+v", tc.profile, g.NVLink)
		}
	}
}

func TestMIGPlacementsAndLayout(t *testing.T) {
	c := catalog.MustDefault()
	p, _ := Lookup(c, "hgx-h100")
	inv, err := Discover(c, p, Node{Name: "n", MIGLayout: []string{"3g.40gb", "2g.20gb", "1g.10gb"}})
	if err != nil {
		t.Fatal(err)
	}
	m := inv.GPUs[0].MIG
	want := map[string][]int{"1g.10gb": {0, 1, 2, 3, 4, 5, 6}, "1g.20gb": {0, 2, 4, 6}, "2g.20gb": {0, 2, 4}, "3g.40gb": {0, 4}, "4g.40gb": {0}, "7g.80gb": {0}}
	for name, starts := range want {
		pr, ok := m.Profile(name)
		if !ok || len(pr.Placements) != len(starts) {
			t.Errorf("%s: %+v, want placements %v", name, pr, starts)
			continue
		}
		for i := range starts {
			if pr.Placements[i] != starts[i] {
				t.Errorf("%s: placements %v, want %v", name, pr.Placements, starts)
			}
		}
	}
	if !m.Enabled || len(m.Instances) != 3 || m.Instances[0].Start != 0 || m.Instances[1].Start != 4 || m.Instances[2].Start != 6 {
		t.Errorf("instances %+v", m.Instances)
	}
	// UUIDs are stable per node and distinct across nodes.
	again, _ := Discover(c, p, Node{Name: "n", MIGLayout: []string{"3g.40gb", "2g.20gb", "1g.10gb"}})
	other, _ := Discover(c, p, Node{Name: "m"})
	if again.GPUs[3].UUID != inv.GPUs[3].UUID || other.GPUs[3].UUID == inv.GPUs[3].UUID {
		t.Error("GPU UUIDs not stable per node or not distinct across nodes")
	}
}

func TestErrors(t *testing.T) {
	c := catalog.MustDefault()
	if _, err := Lookup(c, "hgx-h300"); err == nil || !strings.Contains(err.Error(), "hgx-h100") {
		t.Errorf("unknown profile: %v", err)
	}
	p, _ := Lookup(c, "hgx-h100")
	if _, err := Discover(c, p, Node{Name: "n", MIGLayout: []string{"4g.40gb", "4g.40gb"}}); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Errorf("overfull layout: %v", err)
	}
	if _, err := Discover(c, p, Node{Name: "n", MIGLayout: []string{"5g.50gb"}}); err == nil || !strings.Contains(err.Error(), "not a MIG profile") {
		t.Errorf("bad profile: %v", err)
	}
	if _, err := Discover(c, p, Node{Name: "n", NVLinkDown: []int{0}}); err == nil || !strings.Contains(err.Error(), "no multi-node NVLink domain") {
		t.Errorf("nvlinkDown on an HGX node: %v", err)
	}
	gb, _ := Lookup(c, "gb200-nvl72")
	if _, err := Discover(c, gb, Node{Name: "n", NVLinkDomain: "d", NVLinkDown: []int{4}}); err == nil || !strings.Contains(err.Error(), "GPU 4 is not on the node; its GPUs are 0 to 3") {
		t.Errorf("nvlinkDown past the node's GPUs: %v", err)
	}
	if inv, err := Discover(c, gb, Node{Name: "n", NVLinkDomain: "d", NVLinkDown: []int{3}}); err != nil || inv.GPUs[3].NVLink != nil || inv.GPUs[2].NVLink == nil {
		t.Errorf("nvlinkDown [3]: %v", err)
	}
	a10, _ := Lookup(c, "azure-nv6ads-a10-v5")
	if _, err := Discover(c, a10, Node{Name: "n", MIGLayout: []string{"1g.10gb"}}); err == nil {
		t.Error("MIG layout on a vGPU accepted")
	}
}
