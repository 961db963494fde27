package catalog

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// DeviceCount is n devices of one kind, as a deployment uses them.
type DeviceCount struct {
	Device Device
	N      int
}

// MIG geometry of the A100/H100/H200/B200 generation: eight memory
// slices and seven compute slices per GPU.
const (
	MIGMemorySlices  = 8
	MIGComputeSlices = 7
)

// Slices reads the profile's memory slices (of eight) from its memory
// fraction and its compute slices from its name ("3g.40gb": three).
func (p MIGProfile) Slices() (memory, compute int, err error) {
	memory = int(math.Round(p.MemoryFraction * MIGMemorySlices))
	compute, err = strconv.Atoi(strings.SplitN(p.Profile, "g", 2)[0])
	if err != nil || memory < 1 || compute < 1 {
		return 0, 0, fmt.Errorf("MIG profile %s of %s: cannot read its compute and memory slices", p.Profile, p.GPU)
	}
	return memory, compute, nil
}

// Placements are the memory slices an instance may start at (NVIDIA's
// rule on A100/H100/H200): multiples of its size, as many as its instance
// limit allows; a media-extension profile (+me), one a GPU, wherever a
// plain instance of its size fits.
func (p MIGProfile) Placements() []int {
	size, _, err := p.Slices()
	if err != nil {
		return nil
	}
	var out []int
	if strings.Contains(p.Profile, "+me") {
		for s := 0; s+size <= MIGMemorySlices && s < MIGComputeSlices; s += size {
			out = append(out, s)
		}
		return out
	}
	for k := 0; k < p.MaxInstances && (k+1)*size <= MIGMemorySlices; k++ {
		out = append(out, k*size)
	}
	return out
}

// PhysicalGPUs is the number of whole GPUs the devices occupy under the
// real placement rules: a whole GPU is one; MIG instances of one GPU
// model are packed together (a profile of s memory slices starts at a
// multiple of s below s times its instance limit, within the seven
// compute slices, as the driver's profiles place them), first-fit by
// decreasing size; vGPU shares of a GPU
// share it only with shares of the same size (time-sliced vGPU profiles
// are homogeneous per GPU), so 1/f of them fill one.
func (c *Catalog) PhysicalGPUs(use []DeviceCount) int {
	total := 0
	mig := map[string][]migItem{} // by GPU model
	type share struct {
		gpu    string
		perGPU int
	}
	vgpu := map[share]int{} // by GPU model and shares a GPU holds
	for _, u := range use {
		if u.N <= 0 {
			continue
		}
		switch u.Device.Kind {
		case SliceMIG:
			it, ok := c.migItem(u.Device)
			if !ok {
				total += u.N // unknown geometry: no sharing assumed
				continue
			}
			it.n = u.N
			mig[u.Device.GPU.Name] = append(mig[u.Device.GPU.Name], it)
		case SliceVGPU:
			vgpu[share{u.Device.GPU.Name, vgpuPerGPU(u.Device)}] += u.N
		default:
			total += u.N
		}
	}
	for sh, n := range vgpu {
		total += (n + sh.perGPU - 1) / sh.perGPU
	}
	for _, items := range mig {
		if n, ok := packMIGExact(items); ok {
			total += n
		} else {
			total += packMIG(items)
		}
	}
	return total
}

type migItem struct {
	profile         string
	memory, compute int
	starts          []int // placements
	maxPerGPU       int
	n               int
}

func (c *Catalog) migItem(d Device) (migItem, bool) {
	for _, p := range c.MIG[d.GPU.Name] {
		if p.Profile != d.Slice {
			continue
		}
		mem, g, err := p.Slices()
		if err != nil {
			return migItem{}, false
		}
		return migItem{profile: p.Profile, memory: mem, compute: g, starts: p.Placements(), maxPerGPU: max(p.MaxInstances, 1)}, true
	}
	return migItem{}, false
}

// migGPU is one GPU's instances; whether another fits is decided by
// trying every placement of all of them, since a greedy choice of start
// slices can strand a slot another profile needs (at most seven
// instances a GPU, so the search is small).
type migGPU struct{ items []migItem }

func (g *migGPU) place(it migItem) bool {
	if !migFeasible(append(g.items[:len(g.items):len(g.items)], it)) {
		return false
	}
	g.items = append(g.items, it)
	return true
}

func (g *migGPU) full(smallest migItem) bool {
	return !migFeasible(append(g.items[:len(g.items):len(g.items)], smallest))
}

// migFeasible reports whether the instances fit one GPU together.
func migFeasible(items []migItem) bool {
	count := map[string]int{}
	var dfs func(i int, used [MIGMemorySlices]bool, compute int) bool
	dfs = func(i int, used [MIGMemorySlices]bool, compute int) bool {
		if i == len(items) {
			return true
		}
		it := items[i]
		if compute+it.compute > MIGComputeSlices || count[it.profile] >= it.maxPerGPU {
			return false
		}
		for _, start := range it.starts {
			u, ok := used, true
			for s := start; s < start+it.memory; s++ {
				ok = ok && !u[s]
				u[s] = true
			}
			if !ok {
				continue
			}
			count[it.profile]++
			fits := dfs(i+1, u, compute+it.compute)
			count[it.profile]--
			if fits {
				return true
			}
		}
		return false
	}
	return dfs(0, [MIGMemorySlices]bool{}, 0)
}

// packMIGExact is the fewest GPUs that hold the instances, by dynamic
// programming over the remaining counts with the maximal per-GPU patterns
// of the profiles present; ok is false when the state space is too large
// (then first-fit decreasing, packMIG, answers).
func packMIGExact(items []migItem) (int, bool) {
	byProfile := map[string]int{}
	var kinds []migItem
	for _, it := range items {
		if i, seen := byProfile[it.profile]; seen {
			kinds[i].n += it.n
			continue
		}
		byProfile[it.profile] = len(kinds)
		kinds = append(kinds, it)
	}
	if len(kinds) == 1 { // one profile: as many a GPU as fit
		k := kinds[0]
		per := 0
		for c := 1; c <= min(k.maxPerGPU, MIGComputeSlices); c++ {
			on := make([]migItem, c)
			for i := range on {
				on[i] = k
			}
			if migFeasible(on) {
				per = c
			}
		}
		if per == 0 {
			return k.n, true
		}
		return (k.n + per - 1) / per, true
	}
	states := 1
	for _, k := range kinds {
		states *= k.n + 1
		if states > 200_000 {
			return 0, false
		}
	}
	// Every feasible pattern (instances of each profile on one GPU), then
	// only those no other feasible pattern contains.
	var all [][]int
	cur := make([]int, len(kinds))
	var enum func(i int)
	enum = func(i int) {
		if i == len(kinds) {
			var on []migItem
			for j, c := range cur {
				for range c {
					on = append(on, kinds[j])
				}
			}
			if len(on) > 0 && migFeasible(on) {
				all = append(all, append([]int(nil), cur...))
			}
			return
		}
		for c := 0; c <= min(kinds[i].maxPerGPU, kinds[i].n, MIGComputeSlices); c++ {
			cur[i] = c
			enum(i + 1)
		}
	}
	enum(0)
	var maximal [][]int
	for _, p := range all {
		dominated := false
		for _, q := range all {
			if !slicesEqual(p, q) && contains(q, p) {
				dominated = true
				break
			}
		}
		if !dominated {
			maximal = append(maximal, p)
		}
	}
	if states*len(maximal) > 4_000_000 {
		return 0, false
	}
	memo := map[string]int{}
	var solve func(v []int) int
	solve = func(v []int) int {
		zero := true
		for _, x := range v {
			zero = zero && x == 0
		}
		if zero {
			return 0
		}
		key := fmt.Sprint(v)
		if r, ok := memo[key]; ok {
			return r
		}
		best := math.MaxInt
		next := make([]int, len(v))
		for _, p := range maximal {
			progress := false
			for i := range v {
				next[i] = max(0, v[i]-p[i])
				progress = progress || next[i] < v[i]
			}
			if progress {
				best = min(best, 1+solve(append([]int(nil), next...)))
			}
		}
		memo[key] = best
		return best
	}
	v := make([]int, len(kinds))
	for i, k := range kinds {
		v[i] = k.n
	}
	return solve(v), true
}

func contains(q, p []int) bool {
	for i := range p {
		if q[i] < p[i] {
			return false
		}
	}
	return true
}

func slicesEqual(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// packMIG packs the instances first-fit by decreasing size; GPUs that can
// take nothing more leave the open list, so the cost stays linear.
func packMIG(items []migItem) int {
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].memory != items[j].memory {
			return items[i].memory > items[j].memory
		}
		return items[i].compute > items[j].compute // 4g before 3g: a 4g starts only at slice 0
	})
	smallest := items[len(items)-1]
	var open []*migGPU
	gpus := 0
	for _, it := range items {
		for range it.n {
			placed := false
			for _, g := range open {
				if g.place(it) {
					placed = true
					break
				}
			}
			if !placed {
				g := &migGPU{}
				g.place(it)
				open = append(open, g)
				gpus++
			}
			kept := open[:0]
			for _, g := range open {
				if !g.full(smallest) {
					kept = append(kept, g)
				}
			}
			open = kept
		}
	}
	return gpus
}

// Occupancy is the share of its GPU one device takes out of use: a MIG
// profile its larger share of memory and compute slices (3g.40gb: half an
// H100), a vGPU share its fraction, a whole GPU one.
func (c *Catalog) Occupancy(d Device) float64 {
	switch d.Kind {
	case SliceMIG:
		if it, ok := c.migItem(d); ok {
			return math.Max(float64(it.memory)/MIGMemorySlices, float64(it.compute)/MIGComputeSlices)
		}
		return 1
	case SliceVGPU:
		return 1 / float64(vgpuPerGPU(d))
	}
	return 1
}

// vgpuPerGPU is how many shares of d's size one GPU holds (at least one).
func vgpuPerGPU(d Device) int { return max(1, int(math.Floor(1/d.ComputeFraction+1e-9))) }
