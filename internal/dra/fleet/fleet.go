// Package fleet publishes ResourceSlices for many fake GPU nodes from their
// machine profiles: the DRA driver's stand-in for a cluster of real nodes on
// the local control plane, and a what-if for capacity planning. Each node's
// slices are owned by its Node object and published by the same
// resourceslice controller a node's kubelet plugin uses.
package fleet

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
	"github.com/gpuplane/gpuplane/internal/strict"
)

// APIVersion and Kind of a fleet file.
const (
	APIVersion = "gpuplane.io/v1alpha1"
	Kind       = "Fleet"
)

// File is a fleet file.
type File struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       Spec   `json:"spec"`
}

// Spec lists node pools and the driver features they default to.
type Spec struct {
	Features  slices.Features `json:"features"`
	NodePools []NodePool      `json:"nodePools"`
}

// NodePool is Count nodes of one profile.
type NodePool struct {
	Name    string `json:"name"`
	Profile string `json:"profile"`
	Count   int    `json:"count"`
	// GPUs overrides the profile's GPUs per node.
	GPUs   int               `json:"gpus,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Features overrides the fleet's features for this pool.
	Features *slices.Features `json:"features,omitempty"`
	// MIGLayout enables static MIG with these instances on every GPU.
	MIGLayout []string `json:"migLayout,omitempty"`
	// NVLinkDomainNodes groups consecutive nodes into NVLink domains of this
	// many nodes (18 compute trays in a GB200 NVL72); 0: one domain per pool.
	NVLinkDomainNodes int `json:"nvlinkDomainNodes,omitempty"`
	// NVLinkDown lists, per node name, GPU indices whose NVLink fabric is
	// not up (a degraded tray).
	NVLinkDown map[string][]int `json:"nvlinkDown,omitempty"`
}

// Node is one fake node and what it publishes.
type Node struct {
	Name     string
	Pool     string
	Profile  profiles.Profile
	Labels   map[string]string
	Inv      *inventory.Node
	Features slices.Features
	Slices   *slices.Result
}

// Load reads and checks a fleet file.
func Load(path string) (*File, error) {
	b, err := strict.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	return Parse(b)
}

// MaxNodes bounds a fleet: each node is an object on the API server and a
// slice controller in this process.
const MaxNodes = 10_000

// Parse decodes a fleet strictly: unknown fields are errors that name them.
func Parse(b []byte) (*File, error) {
	var f File
	if err := strict.Unmarshal(bytes.TrimSpace(b), &f); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if f.APIVersion != APIVersion || f.Kind != Kind {
		return nil, fmt.Errorf("fleet: apiVersion/kind %q/%q, want %s/%s", f.APIVersion, f.Kind, APIVersion, Kind)
	}
	if len(f.Spec.NodePools) == 0 {
		return nil, fmt.Errorf("fleet: spec.nodePools is empty; add at least one pool with name, profile and count")
	}
	seen := map[string]bool{}
	nodes := 0
	for i, p := range f.Spec.NodePools {
		path := fmt.Sprintf("spec.nodePools[%d]", i)
		if p.Name == "" {
			return nil, fmt.Errorf("fleet: %s.name: required", path)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("fleet: %s.name: %q used twice", path, p.Name)
		}
		seen[p.Name] = true
		// Node names are the pool's name and an index: both must make a valid Node name.
		if errs := validation.IsDNS1123Subdomain(p.Name + "-" + strconv.Itoa(max(p.Count-1, 0))); len(errs) > 0 {
			return nil, fmt.Errorf("fleet: %s.name: %q does not make valid node names: %s", path, p.Name, strings.Join(errs, "; "))
		}
		if p.Count < 1 || p.Count > MaxNodes {
			return nil, fmt.Errorf("fleet: %s.count: %d, want 1 to %d", path, p.Count, MaxNodes)
		}
		if nodes += p.Count; nodes > MaxNodes {
			return nil, fmt.Errorf("fleet: %s.count: the fleet reaches %d nodes, at most %d", path, nodes, MaxNodes)
		}
		if p.GPUs < 0 || p.GPUs > 72 {
			return nil, fmt.Errorf("fleet: %s.gpus: %d, want 0 (the profile's count) to 72", path, p.GPUs)
		}
		if p.NVLinkDomainNodes < 0 {
			return nil, fmt.Errorf("fleet: %s.nvlinkDomainNodes: %d, want >= 0", path, p.NVLinkDomainNodes)
		}
		for node := range p.NVLinkDown {
			if j, err := strconv.Atoi(strings.TrimPrefix(node, p.Name+"-")); err != nil || j < 0 || j >= p.Count || node != p.Name+"-"+strconv.Itoa(j) {
				return nil, fmt.Errorf("fleet: %s.nvlinkDown: node %q is not in this pool; its nodes are %s-0 to %s-%d", path, node, p.Name, p.Name, p.Count-1)
			}
		}
		for k, v := range p.Labels {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return nil, fmt.Errorf("fleet: %s.labels: key %q: %s", path, k, strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return nil, fmt.Errorf("fleet: %s.labels[%s]: value %q: %s", path, k, v, strings.Join(errs, "; "))
			}
		}
		if p.Profile == "" {
			return nil, fmt.Errorf("fleet: %s.profile: required (see `gpuplane dra-driver profiles`)", path)
		}
	}
	return &f, nil
}

// Nodes expands the pools into nodes with their inventories and slices.
func (f *File) Nodes(c *catalog.Catalog) ([]Node, error) {
	var out []Node
	for i, p := range f.Spec.NodePools {
		prof, err := profiles.Lookup(c, p.Profile)
		if err != nil {
			return nil, fmt.Errorf("fleet: spec.nodePools[%d].profile: %w", i, err)
		}
		feat := f.Spec.Features
		if p.Features != nil {
			feat = *p.Features
		}
		per := p.NVLinkDomainNodes
		if per <= 0 {
			per = p.Count
		}
		for j := range p.Count {
			name := p.Name + "-" + strconv.Itoa(j)
			inv, err := profiles.Discover(c, prof, profiles.Node{Name: name, MIGLayout: p.MIGLayout,
				NVLinkDomain: p.Name + "-domain-" + strconv.Itoa(j/per), CliqueID: 1, NVLinkDown: p.NVLinkDown[name], GPUs: p.GPUs})
			if err != nil {
				return nil, fmt.Errorf("fleet: spec.nodePools[%d]: %w", i, err)
			}
			r, err := slices.Build(inv, feat, nil)
			if err != nil {
				return nil, fmt.Errorf("fleet: node %s: %w", name, err)
			}
			labels := map[string]string{
				"nvidia.com/gpu.present": "true",
				"nvidia.com/gpu.count":   strconv.Itoa(len(inv.GPUs)),
				"gpuplane.io/node-pool":  p.Name,
				"gpuplane.io/profile":    prof.Name,
			}
			for k, v := range p.Labels {
				labels[k] = v
			}
			out = append(out, Node{Name: name, Pool: p.Name, Profile: prof, Labels: labels, Inv: inv, Features: feat, Slices: r})
		}
	}
	return out, nil
}
