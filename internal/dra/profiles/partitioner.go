package profiles

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

// Partitioner creates MIG partitions on a profile node the way the GPU
// would: a partition is refused where it overlaps one that exists. UUIDs are
// stable for (node, GPU, profile, placement), so a restarted plugin and its
// checkpoint agree.
type Partitioner struct {
	Node string
	Inv  *inventory.Node

	mu   sync.Mutex
	used map[string][]bool // GPU UUID -> memory slices in use
}

// Create makes the partition and returns its MIG UUID.
func (p *Partitioner) Create(gpuUUID, profile string, start int) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, prof, err := p.find(gpuUUID, profile)
	if err != nil {
		return "", err
	}
	if p.used == nil {
		p.used = map[string][]bool{}
	}
	u := p.used[gpuUUID]
	if u == nil {
		u = make([]bool, g.MIG.MemorySlices)
		p.used[gpuUUID] = u
	}
	if start < 0 || start+prof.MemorySlices > len(u) {
		return "", fmt.Errorf("placement %d of %s leaves the GPU", start, profile)
	}
	for s := start; s < start+prof.MemorySlices; s++ {
		if u[s] {
			return "", fmt.Errorf("placement %d of %s overlaps an existing partition (memory slice %d)", start, profile, s)
		}
	}
	for s := start; s < start+prof.MemorySlices; s++ {
		u[s] = true
	}
	return "MIG-" + uuid(p.Node, strconv.Itoa(g.Index), profile, strconv.Itoa(start)), nil
}

// Restore takes back a partition a restarted plugin's checkpoint holds.
func (p *Partitioner) Restore(gpuUUID, profile string, start int) error {
	_, err := p.Create(gpuUUID, profile, start)
	return err
}

// Destroy frees the partition; destroying one that is gone is not an error.
func (p *Partitioner) Destroy(gpuUUID, profile string, start int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, prof, err := p.find(gpuUUID, profile)
	if err != nil {
		return err
	}
	if u := p.used[gpuUUID]; u != nil {
		for s := start; s < start+prof.MemorySlices && s < len(u); s++ {
			u[s] = false
		}
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
