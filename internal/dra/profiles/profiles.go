// Package profiles is device discovery without a device library: machine
// profiles (cloud instance types and GPU systems) turned into the inventory a
// real node of that kind reports. Fake nodes on the local control plane,
// fleet mode and what-if planning use it; the facts come from the catalog.
package profiles

import (
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

// Versions a profile node reports (semantic versions).
const (
	DriverVersion     = "580.95.5"
	CUDADriverVersion = "13.0.0"
)

// Profile is one kind of machine.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// GPU is the catalog name of the physical GPU.
	GPU  string `json:"gpu"`
	GPUs int    `json:"gpus"`
	// VGPU is set for vGPU guests: the profile, fraction and memory the guest sees.
	VGPU      *inventory.VGPU `json:"vgpu,omitempty"`
	VGPUGiB   float64         `json:"vgpuGiB,omitempty"`
	MIG       bool            `json:"migCapable"`
	NVLinkMNN bool            `json:"multiNodeNVLink,omitempty"`
}

// Node says which node a profile describes and how it is set up.
type Node struct {
	Name string
	// MIGLayout, when set on a MIG-capable profile, enables MIG with these
	// instances on every GPU (static MIG), e.g. ["3g.40gb", "3g.40gb"].
	MIGLayout []string
	// NVLinkDomain and CliqueID place the node's GPUs in a multi-node NVLink
	// domain (GB200 NVL72 rack); ignored by other profiles.
	NVLinkDomain string
	CliqueID     int
	// NVLinkDown lists GPU indices whose NVLink fabric is not up: they
	// report no domain, as NVML does before the fabric manager finishes.
	NVLinkDown []int
	// GPUs, when > 0, overrides the profile's GPU count (a smaller what-if node).
	GPUs int
}

// All lists the built-in profiles, sorted by name.
func All(c *catalog.Catalog) []Profile {
	ps := []Profile{
		{Name: "hgx-h100", Description: "HGX H100 80GB SXM, 8 GPUs, MIG capable (AKS ND96isr_H100_v5, GKE a3-highgpu-8g)", GPU: "h100_sxm", GPUs: 8, MIG: true},
		{Name: "hgx-h200", Description: "HGX H200 141GB SXM, 8 GPUs, MIG capable (AKS ND96isr_H200_v5, GKE a3-ultragpu-8g)", GPU: "h200_sxm", GPUs: 8, MIG: true},
		{Name: "hgx-a100-80gb", Description: "HGX A100 80GB SXM, 8 GPUs, MIG capable (AKS ND96amsr_A100_v4, GKE a2-ultragpu-8g)", GPU: "a100_80gb", GPUs: 8, MIG: true},
		{Name: "gb200-nvl72", Description: "GB200 NVL72 compute tray: 4 GB200 GPUs in a 72-GPU NVLink domain", GPU: "gb200", GPUs: 4, NVLinkMNN: true},
		{Name: "azure-nv36ads-a10-v5", Description: "Azure Standard_NV36ads_A10_v5: a whole A10 as vGPU A10-24Q", GPU: "a10", GPUs: 1,
			VGPU: &inventory.VGPU{Profile: "NVIDIA A10-24Q", Fraction: "1"}, VGPUGiB: 24},
		{Name: "gcp-g4-standard-48", Description: "GCP g4-standard-48: one whole RTX PRO 6000", GPU: "rtx_pro_6000", GPUs: 1},
	}
	// Fractional cloud instances come from the catalog's vGPU table.
	for _, g := range c.GPUs {
		for _, v := range c.VGPU[g.Name] {
			for _, inst := range v.Instances {
				prof := v.Profile
				if prof != "" && !strings.HasPrefix(prof, "NVIDIA ") {
					prof = "NVIDIA " + prof
				}
				ps = append(ps, Profile{Name: instanceProfileName(v.Cloud, inst),
					Description: fmt.Sprintf("%s %s: %s of an %s (%g GiB)", cloudName(v.Cloud), inst, v.Fraction, g.ProductName, v.MemoryGiB),
					GPU:         g.Name, GPUs: 1, VGPU: &inventory.VGPU{Profile: prof, Fraction: v.Fraction}, VGPUGiB: v.MemoryGiB})
			}
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

func cloudName(c string) string {
	switch c {
	case "azure":
		return "Azure"
	case "gcp":
		return "GCP"
	}
	return c
}

// instanceProfileName turns Standard_NV12ads_A10_v5 into azure-nv12ads-a10-v5.
func instanceProfileName(cloud, inst string) string {
	s := strings.ToLower(strings.TrimPrefix(inst, "Standard_"))
	s = strings.ReplaceAll(s, "_", "-")
	if cloud == "" {
		return s
	}
	return cloud + "-" + s
}

// Lookup finds a profile by name, or fails listing the names there are.
func Lookup(c *catalog.Catalog, name string) (Profile, error) {
	var names []string
	for _, p := range All(c) {
		if p.Name == strings.ToLower(strings.TrimSpace(name)) {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("unknown device profile %q; known profiles: %s", name, strings.Join(names, ", "))
}

// Discover is the inventory a node of profile p reports.
func Discover(c *catalog.Catalog, p Profile, n Node) (*inventory.Node, error) {
	g, err := c.GPU(p.GPU)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	if len(n.MIGLayout) > 0 && !p.MIG {
		return nil, fmt.Errorf("profile %s: migLayout given but %s is not MIG capable in this profile", p.Name, g.ProductName)
	}
	inv := &inventory.Node{DriverVersion: DriverVersion, CUDADriverVersion: CUDADriverVersion}
	count := p.GPUs
	if n.GPUs > 0 {
		count = n.GPUs
	}
	if err := checkNVLinkDown(p, n.NVLinkDown, count); err != nil {
		return nil, err
	}
	for i := range count {
		bus := 0x18 + 0x10*i
		d := inventory.GPU{
			Index: i, UUID: "GPU-" + uuid(n.Name, strconv.Itoa(i)),
			ProductName: g.ProductName, Brand: "Nvidia", Architecture: archName(g.Architecture),
			CUDAComputeCapability: g.ComputeCapability,
			MemoryBytes:           gib(g.MemoryGiB), Multiprocessors: g.SMCount,
			PCIBusID: fmt.Sprintf("0000:%02x:00.0", bus),
			// Two GPUs share a PCIe switch under one root complex, as on HGX boards.
			PCIeRoot: fmt.Sprintf("pci0000:%02x", 0x10+0x20*(i/2)),
		}
		if p.VGPU != nil {
			v := *p.VGPU
			d.VGPU = &v
			// productName stays the physical GPU's, so one selector covers the
			// whole GPU and its shares; the vGPU type is its own attribute.
			d.MemoryBytes = gib(p.VGPUGiB)
			if f, err := catalog.ParseFraction(v.Fraction); err == nil {
				d.Multiprocessors = int(math.Round(float64(g.SMCount) * f))
			}
		}
		if p.MIG {
			m, err := migOf(c, g, n.Name, i, n.MIGLayout)
			if err != nil {
				return nil, fmt.Errorf("profile %s: %w", p.Name, err)
			}
			d.MIG = m
		}
		if p.NVLinkMNN && n.NVLinkDomain != "" && !slices.Contains(n.NVLinkDown, i) {
			d.NVLink = &inventory.NVLink{ClusterUUID: uuid("nvlink-domain", n.NVLinkDomain), CliqueID: n.CliqueID}
		}
		inv.GPUs = append(inv.GPUs, d)
	}
	if err := inv.Validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	return inv, nil
}

// checkNVLinkDown refuses a degraded-fabric list that would change nothing:
// a GPU the node does not have, or a profile without a multi-node NVLink
// domain.
func checkNVLinkDown(p Profile, down []int, gpus int) error {
	if len(down) > 0 && !p.NVLinkMNN {
		return fmt.Errorf("profile %s: nvlinkDown given, but its GPUs are in no multi-node NVLink domain (a GB200 NVL72 profile's are)", p.Name)
	}
	for _, i := range down {
		if i < 0 || i >= gpus {
			return fmt.Errorf("profile %s: nvlinkDown: GPU %d is not on the node; its GPUs are 0 to %d", p.Name, i, gpus-1)
		}
	}
	return nil
}

// migOf derives a GPU's MIG profiles and placements from the catalog
// (catalog.MIGProfile.Slices and Placements).
func migOf(c *catalog.Catalog, g *catalog.GPU, node string, gpu int, layout []string) (*inventory.MIG, error) {
	m := &inventory.MIG{MemorySlices: catalog.MIGMemorySlices, ComputeSlices: catalog.MIGComputeSlices}
	for _, cp := range c.MIG[g.Name] {
		size, gs, err := cp.Slices()
		if err != nil {
			return nil, err
		}
		m.Profiles = append(m.Profiles, inventory.MIGProfile{Name: cp.Profile, ComputeSlices: gs, MemorySlices: size,
			MemoryBytes: gib(cp.MemoryGiB), Multiprocessors: cp.SMs, Placements: cp.Placements()})
	}
	if len(m.Profiles) == 0 {
		return nil, fmt.Errorf("%s has no MIG profiles in the catalog", g.Name)
	}
	if len(layout) == 0 {
		return m, nil
	}
	m.Enabled = true
	used := make([]bool, catalog.MIGMemorySlices)
	for _, name := range layout {
		p, ok := m.Profile(name)
		if !ok {
			return nil, fmt.Errorf("migLayout: %q is not a MIG profile of %s", name, g.Name)
		}
		start := -1
		for _, s := range p.Placements {
			if free(used, s, p.MemorySlices) {
				start = s
				break
			}
		}
		if start < 0 {
			return nil, fmt.Errorf("migLayout %v: no room left on a %s for %s", layout, g.Name, name)
		}
		for s := start; s < start+p.MemorySlices; s++ {
			used[s] = true
		}
		m.Instances = append(m.Instances, inventory.MIGInstance{
			UUID: "MIG-" + uuid(node, strconv.Itoa(gpu), name, strconv.Itoa(start)), Profile: name, Start: start})
	}
	return m, nil
}

func free(used []bool, start, n int) bool {
	for s := start; s < start+n; s++ {
		if used[s] {
			return false
		}
	}
	return true
}

func gib(x float64) int64 { return int64(x * (1 << 30)) }

func archName(a string) string {
	if a == "" {
		return ""
	}
	return strings.ToUpper(a[:1]) + a[1:]
}

// uuid is a stable RFC 4122-shaped identifier for the parts, so a fake
// node's GPUs keep their identity across restarts.
func uuid(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "/")))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
