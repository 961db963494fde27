package catalog

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestPhysicalGPUs(t *testing.T) {
	c := MustDefault()
	dev := func(gpu, slice string) Device {
		d, err := c.Device(gpu, slice)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	h100, m3g, m4g, m1g := dev("h100_sxm", ""), dev("h100_sxm", "3g.40gb"), dev("h100_sxm", "4g.40gb"), dev("h100_sxm", "1g.10gb")
	half, third := dev("a10", "1/2"), dev("a10", "1/3")
	for _, tc := range []struct {
		name string
		use  []DeviceCount
		want int
	}{
		{"two 3g.40gb fill an H100", []DeviceCount{{m3g, 4}}, 2},
		{"an odd 3g.40gb takes a GPU of its own", []DeviceCount{{m3g, 3}}, 2},
		{"4g.40gb and 3g.40gb share a GPU", []DeviceCount{{m4g, 2}, {m3g, 2}}, 2},
		{"two 4g.40gb never share", []DeviceCount{{m4g, 2}}, 2},
		{"seven 1g.10gb per GPU", []DeviceCount{{m1g, 8}}, 2},
		{"1g.10gb fill beside a 3g", []DeviceCount{{m3g, 1}, {m1g, 4}}, 1},
		{"whole GPUs count themselves", []DeviceCount{{h100, 3}, {m3g, 1}}, 4},
		{"vGPU halves pair up", []DeviceCount{{half, 3}}, 2},
		{"vGPU sizes do not mix on a GPU", []DeviceCount{{half, 1}, {third, 1}}, 2},
		{"three thirds fill an A10", []DeviceCount{{third, 3}}, 1},
		{"nothing", nil, 0},
	} {
		if got := c.PhysicalGPUs(tc.use); got != tc.want {
			t.Errorf("%s: %d GPUs, want %d", tc.name, got, tc.want)
		}
	}
}

// Packing is checked against the brute-force lower bound (memory and
// compute slices) and an upper bound of one GPU per instance.
func TestPhysicalGPUsBounds(t *testing.T) {
	c := MustDefault()
	profiles := []string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}
	next := rand.New(rand.NewPCG(1, 0)).IntN
	for trial := range 2000 {
		var use []DeviceCount
		mem, comp, inst := 0, 0, 0
		for range 1 + next(3) {
			p := profiles[next(len(profiles))]
			d, _ := c.Device("h100_sxm", p)
			it, _ := c.migItem(d)
			n := 1 + next(9)
			use = append(use, DeviceCount{d, n})
			mem, comp, inst = mem+n*it.memory, comp+n*it.compute, inst+n
		}
		got := c.PhysicalGPUs(use)
		lower := max((mem+7)/8, (comp+6)/7)
		if got < lower || got > inst {
			t.Fatalf("trial %d %v: %d GPUs outside [%d, %d]", trial, use, got, lower, inst)
		}
	}
}

// minGPUs is the brute-force optimum: every partition of the instances
// into GPUs, each checked with every placement.
func minGPUs(items []migItem) int {
	best := len(items)
	var rec func(i int, groups [][]migItem)
	rec = func(i int, groups [][]migItem) {
		if len(groups) >= best {
			return
		}
		if i == len(items) {
			best = len(groups)
			return
		}
		for g := range groups {
			groups[g] = append(groups[g], items[i])
			if migFeasible(groups[g]) {
				rec(i+1, groups)
			}
			groups[g] = groups[g][:len(groups[g])-1]
		}
		rec(i+1, append(groups, []migItem{items[i]}))
	}
	rec(0, nil)
	return best
}

func TestPhysicalGPUsAgainstBruteForce(t *testing.T) {
	c := MustDefault()
	profiles := []string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"}
	next := rand.New(rand.NewPCG(7, 0)).IntN
	for trial := range 1000 {
		var use []DeviceCount
		var items []migItem
		for range 1 + next(3) {
			d, _ := c.Device("h100_sxm", profiles[next(len(profiles))])
			it, _ := c.migItem(d)
			n := 1 + next(3)
			use = append(use, DeviceCount{d, n})
			for range n {
				items = append(items, it)
			}
		}
		if got, want := c.PhysicalGPUs(use), minGPUs(items); got != want {
			t.Errorf("trial %d %v: packed on %d GPUs, the optimum is %d", trial, use, got, want)
		}
	}
}

func TestOccupancy(t *testing.T) {
	c := MustDefault()
	for _, tc := range []struct {
		gpu, slice string
		want       float64
	}{{"h100_sxm", "", 1}, {"h100_sxm", "3g.40gb", 0.5}, {"h100_sxm", "4g.40gb", 4.0 / 7}, {"h100_sxm", "1g.10gb", 1.0 / 7}, {"a10", "1/3", 1.0 / 3}} {
		d, _ := c.Device(tc.gpu, tc.slice)
		if got := c.Occupancy(d); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s:%s occupies %g of its GPU, want %g", tc.gpu, tc.slice, got, tc.want)
		}
	}
}
