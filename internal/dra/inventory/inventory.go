// Package inventory is what a node's device library reports about its GPUs:
// the GPUs, their MIG capabilities and instances, vGPU profiles and NVLink
// fabric. Discovery implementations (NVML, profiles) fill it in; the slice
// builder and the kubelet plugin read it. Pure data, no I/O.
package inventory

import (
	"fmt"
	"strings"
)

// Node is one node's view of its GPUs.
type Node struct {
	// DriverVersion and CUDADriverVersion are semantic versions ("580.95.5", "13.0.0").
	DriverVersion     string `json:"driverVersion"`
	CUDADriverVersion string `json:"cudaDriverVersion"`
	GPUs              []GPU  `json:"gpus"`
}

// GPU is one physical GPU, or the one device a vGPU guest sees.
type GPU struct {
	Index        int    `json:"index"`
	UUID         string `json:"uuid"`
	ProductName  string `json:"productName"`
	Brand        string `json:"brand"`
	Architecture string `json:"architecture"`
	// CUDAComputeCapability is "major.minor".
	CUDAComputeCapability string `json:"cudaComputeCapability"`
	MemoryBytes           int64  `json:"memoryBytes"`
	Multiprocessors       int    `json:"multiprocessors"`
	PCIBusID              string `json:"pciBusID,omitempty"`
	// PCIeRoot is the root complex ("pci0000:00"), Kubernetes' standard attribute.
	PCIeRoot string `json:"pcieRoot,omitempty"`
	// MIG is nil when the GPU cannot be partitioned.
	MIG *MIG `json:"mig,omitempty"`
	// VGPU is set in a vGPU guest: the device is a share of a physical GPU.
	VGPU *VGPU `json:"vgpu,omitempty"`
	// NVLink is set for GPUs in a multi-node NVLink domain (GB200 NVL72).
	NVLink *NVLink `json:"nvlink,omitempty"`
}

// MIG is a GPU's partitioning: its profiles with their placements, and the
// instances that exist now (static MIG).
type MIG struct {
	Enabled bool `json:"enabled"`
	// MemorySlices and ComputeSlices are the GPU's totals (8 and 7 on A100/H100/H200).
	MemorySlices  int           `json:"memorySlices"`
	ComputeSlices int           `json:"computeSlices"`
	Profiles      []MIGProfile  `json:"profiles"`
	Instances     []MIGInstance `json:"instances,omitempty"`
}

// MIGProfile is one GPU instance profile, e.g. 3g.40gb.
type MIGProfile struct {
	Name            string `json:"name"`
	ComputeSlices   int    `json:"computeSlices"`
	MemorySlices    int    `json:"memorySlices"`
	MemoryBytes     int64  `json:"memoryBytes"`
	Multiprocessors int    `json:"multiprocessors"`
	// Placements are the memory-slice start positions the profile may occupy.
	Placements []int `json:"placements"`
}

// MIGInstance is a MIG device that exists on the GPU.
type MIGInstance struct {
	UUID    string `json:"uuid"`
	Profile string `json:"profile"`
	// Start is its placement (first memory slice).
	Start int `json:"start"`
}

// VGPU describes the share of a physical GPU a vGPU guest gets.
type VGPU struct {
	// Profile is the vGPU type, e.g. "NVIDIA A10-8Q".
	Profile string `json:"profile"`
	// Fraction of the physical GPU ("1/3").
	Fraction string `json:"fraction"`
}

// NVLink places a GPU in a multi-node NVLink domain.
type NVLink struct {
	// ClusterUUID names the NVLink domain (one NVL72 rack).
	ClusterUUID string `json:"clusterUUID"`
	// CliqueID is the partition within the domain; GPUs of one clique reach each other over NVLink.
	CliqueID int `json:"cliqueID"`
}

// Profile returns the MIG profile named name.
func (m *MIG) Profile(name string) (MIGProfile, bool) {
	for _, p := range m.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return MIGProfile{}, false
}

// Validate reports the first inconsistency that would make published
// devices wrong: duplicate UUIDs or indices, instances of unknown profiles,
// overlapping MIG instances.
func (n *Node) Validate() error {
	uuids := map[string]bool{}
	idx := map[int]bool{}
	for i, g := range n.GPUs {
		path := fmt.Sprintf("gpus[%d]", i)
		if g.UUID == "" {
			return fmt.Errorf("%s.uuid: empty", path)
		}
		if uuids[g.UUID] || idx[g.Index] {
			return fmt.Errorf("%s: duplicate uuid %q or index %d", path, g.UUID, g.Index)
		}
		uuids[g.UUID], idx[g.Index] = true, true
		if g.MemoryBytes <= 0 {
			return fmt.Errorf("%s.memoryBytes: %d, want > 0", path, g.MemoryBytes)
		}
		if g.MIG == nil {
			continue
		}
		used := make([]bool, g.MIG.MemorySlices)
		for j, in := range g.MIG.Instances {
			p, ok := g.MIG.Profile(in.Profile)
			if !ok {
				return fmt.Errorf("%s.mig.instances[%d].profile: %q is not a profile of %s", path, j, in.Profile, g.ProductName)
			}
			for s := in.Start; s < in.Start+p.MemorySlices; s++ {
				if s < 0 || s >= len(used) || used[s] {
					return fmt.Errorf("%s.mig.instances[%d]: %s at %d overlaps another instance or leaves the GPU", path, j, in.Profile, in.Start)
				}
				used[s] = true
			}
		}
	}
	return nil
}

// DNSLabel turns a profile name ("1g.10gb+me") into a device-name part ("1g-10gb-me").
func DNSLabel(s string) string {
	s = strings.ToLower(s)
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

// Semver writes a version as a semantic version, as DRA's version
// attributes need: missing parts are zero and leading zeros go
// ("580.95.05" -> "580.95.5", "9.0" -> "9.0.0").
func Semver(v string) string {
	if v == "" {
		return ""
	}
	parts := strings.Split(v, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	for i, p := range parts {
		p = strings.TrimLeft(p, "0")
		if p == "" {
			p = "0"
		}
		parts[i] = p
	}
	return strings.Join(parts[:3], ".")
}
