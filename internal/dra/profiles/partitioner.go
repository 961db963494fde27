package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"

	"github.com/gpuplane/gpuplane/internal/atomicfile"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

// PartitionStateFile is the state file's name in the plugin's folder.
const PartitionStateFile = "profile-partitions.json"

// Partitioner creates MIG partitions on a profile node the way the GPU
// would: a partition is refused where it overlaps one that exists. UUIDs are
// stable for (node, GPU, profile, placement), so a restarted plugin and its
// checkpoint agree.
type Partitioner struct {
	Node string
	Inv  *inventory.Node
	// StateFile, when set, keeps the partitions across plugin restarts, as
	// a GPU keeps its MIG partitions when the driver restarts, and lets a
	// person or a test see which exist.
	StateFile string

	mu     sync.Mutex
	loaded bool
	parts  map[Partition]bool // what exists; the slices in use follow from it
}

// Partition is one MIG partition that exists.
type Partition struct {
	GPU     string `json:"gpu"`
	Profile string `json:"profile"`
	Start   int    `json:"start"`
}

// Create makes the partition and returns its MIG UUID.
func (p *Partitioner) Create(gpuUUID, profile string, start int) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.createAndSave(gpuUUID, profile, start)
}

// createAndSave creates a partition and records it; mu held.
func (p *Partitioner) createAndSave(gpuUUID, profile string, start int) (string, error) {
	if err := p.load(); err != nil {
		return "", err
	}
	uuid, err := p.create(gpuUUID, profile, start)
	if err != nil {
		return "", err
	}
	if err := p.save(); err != nil {
		delete(p.parts, Partition{GPU: gpuUUID, Profile: profile, Start: start})
		return "", err
	}
	return uuid, nil
}

func (p *Partitioner) create(gpuUUID, profile string, start int) (string, error) {
	g, prof, err := p.find(gpuUUID, profile)
	if err != nil {
		return "", err
	}
	if start < 0 || start+prof.MemorySlices > g.MIG.MemorySlices {
		return "", fmt.Errorf("placement %d of %s leaves the GPU", start, profile)
	}
	clash := -1 // the first memory slice another partition holds
	for pt := range p.parts {
		if pt.GPU != gpuUUID {
			continue
		}
		_, other, err := p.find(pt.GPU, pt.Profile)
		if err != nil {
			return "", err
		}
		if lo, hi := max(start, pt.Start), min(start+prof.MemorySlices, pt.Start+other.MemorySlices); lo < hi && (clash < 0 || lo < clash) {
			clash = lo
		}
	}
	if clash >= 0 {
		return "", fmt.Errorf("placement %d of %s overlaps an existing partition (memory slice %d)", start, profile, clash)
	}
	p.parts[Partition{GPU: gpuUUID, Profile: profile, Start: start}] = true
	return "MIG-" + uuid(p.Node, strconv.Itoa(g.Index), profile, strconv.Itoa(start)), nil
}

// Restore takes back a partition a restarted plugin's checkpoint holds;
// one that still exists (kept in the state file) is taken as it is.
func (p *Partitioner) Restore(gpuUUID, profile string, start int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.load(); err != nil {
		return err
	}
	if p.parts[Partition{GPU: gpuUUID, Profile: profile, Start: start}] {
		return nil
	}
	_, err := p.createAndSave(gpuUUID, profile, start)
	return err
}

// Destroy frees the partition; destroying one that is gone is not an error
// (and frees nothing another partition holds).
func (p *Partitioner) Destroy(gpuUUID, profile string, start int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.load(); err != nil {
		return err
	}
	if _, _, err := p.find(gpuUUID, profile); err != nil {
		return err
	}
	key := Partition{GPU: gpuUUID, Profile: profile, Start: start}
	if !p.parts[key] {
		return nil
	}
	delete(p.parts, key)
	return p.save()
}

// Partitions lists the partitions that exist, in a stable order.
func (p *Partitioner) Partitions() ([]Partition, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.load(); err != nil {
		return nil, err
	}
	return p.list(), nil
}

func (p *Partitioner) list() []Partition {
	out := make([]Partition, 0, len(p.parts))
	for pt := range p.parts {
		out = append(out, pt)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.GPU != b.GPU {
			return a.GPU < b.GPU
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.Profile < b.Profile
	})
	return out
}

// ReadPartitions reads a partitioner's state file (none: no partitions).
func ReadPartitions(path string) ([]Partition, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st partitionState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("partition state %s: %w", path, err)
	}
	return st.Partitions, nil
}

type partitionState struct {
	Partitions []Partition `json:"partitions"`
}

// load reads the state file once; mu held.
func (p *Partitioner) load() error {
	if p.loaded {
		return nil
	}
	p.parts = map[Partition]bool{}
	if p.StateFile != "" {
		parts, err := ReadPartitions(p.StateFile)
		if err != nil {
			return err
		}
		for _, pt := range parts {
			if _, err := p.create(pt.GPU, pt.Profile, pt.Start); err != nil {
				return fmt.Errorf("partition state %s: %w", p.StateFile, err)
			}
		}
	}
	p.loaded = true
	return nil
}

// save writes the state file atomically; mu held.
func (p *Partitioner) save() error {
	if p.StateFile == "" {
		return nil
	}
	b, err := json.MarshalIndent(partitionState{Partitions: p.list()}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(p.StateFile, b, 0o644); err != nil {
		return fmt.Errorf("partition state: %w", err)
	}
	return nil
}

func (p *Partitioner) find(gpuUUID, profile string) (inventory.GPU, inventory.MIGProfile, error) {
	for _, g := range p.Inv.GPUs {
		if g.UUID != gpuUUID {
			continue
		}
		if g.MIG == nil {
			return g, inventory.MIGProfile{}, fmt.Errorf("GPU %s is not MIG capable", gpuUUID)
		}
		prof, ok := g.MIG.Profile(profile)
		if !ok {
			return g, prof, fmt.Errorf("GPU %s has no MIG profile %s", gpuUUID, profile)
		}
		return g, prof, nil
	}
	return inventory.GPU{}, inventory.MIGProfile{}, fmt.Errorf("no GPU %s on node %s", gpuUUID, p.Node)
}

// Static is a discoverer that reports a fixed inventory (a profile node's).
type Static struct{ Node *inventory.Node }

// Discover returns the inventory.
func (s Static) Discover() (*inventory.Node, error) { return s.Node, nil }
