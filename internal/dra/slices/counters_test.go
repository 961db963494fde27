package slices

import (
	"math/rand/v2"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestCountersNeverOvercommit checks the counter encoding against a direct
// statement of MIG's rule on random sets of one GPU's devices: a set fits
// the counters exactly when its partitions' memory ranges are disjoint, its
// compute slices sum to at most 7 and it holds at most one +me instance
// (the whole GPU counts as all of it).
func TestCountersNeverOvercommit(t *testing.T) {
	r, err := Build(node(t, "hgx-h100"), Features{DynamicMIG: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var set resourceapi.CounterSet
	var devs []resourceapi.Device
	for _, s := range r.Slices {
		for _, cs := range s.SharedCounters {
			if cs.Name == "gpu-0-slices" {
				set = cs
			}
		}
		for _, d := range s.Devices {
			if r.Devices[d.Name].GPUIndex == 0 {
				devs = append(devs, d)
			}
		}
	}
	if len(devs) != 26 {
		t.Fatalf("%d devices on GPU 0", len(devs))
	}
	fitsCounters := func(pick []resourceapi.Device) bool {
		used := map[string]int64{}
		for _, d := range pick {
			for name, c := range d.ConsumesCounters[0].Counters {
				used[name] += c.Value.Value()
			}
		}
		for name, v := range used {
			limit := set.Counters[name].Value
			if v > limit.Value() {
				return false
			}
		}
		return true
	}
	valid := func(pick []resourceapi.Device) bool {
		mem := make([]bool, 8)
		compute, me := 0, 0
		for _, d := range pick {
			a := r.Devices[d.Name]
			start, n, g := 0, 8, 7
			if a.Kind == KindMIG {
				start = a.Start
				n = int(*d.Attributes["memorySlices"].IntValue)
				g = int(*d.Attributes["computeSlices"].IntValue)
				if isMediaExtension(a.Profile) {
					me++
				}
			}
			for s := start; s < start+n; s++ {
				if mem[s] {
					return false
				}
				mem[s] = true
			}
			compute += g
		}
		return compute <= 7 && me <= 1
	}
	rng := rand.New(rand.NewPCG(7, 11))
	fit := 0
	for range 50000 {
		var pick []resourceapi.Device
		p := 0.05 + 0.25*rng.Float64()
		for _, d := range devs {
			if rng.Float64() < p {
				pick = append(pick, d)
			}
		}
		c, v := fitsCounters(pick), valid(pick)
		if c != v {
			names := []string{}
			for _, d := range pick {
				names = append(names, d.Name)
			}
			t.Fatalf("%v: counters say %v, MIG rule says %v", names, c, v)
		}
		if c {
			fit++
		}
	}
	if fit < 1000 {
		t.Errorf("only %d random sets fit; the sample says little", fit)
	}
}
