// Package kernels reads measured per-operation kernel timings (GEMM,
// context and generation attention, all-reduce; the gzip CSV tables
// described by shared/reference/kernels/SCHEMA.md) and answers the time
// of an operation at any shape: by interpolation inside the measured grid
// and, outside it, from the nearest measured edge scaled by the roofline.
package kernels

import (
	"math"
	"sort"
)

// Grid is a table of latencies over numeric keys, stored as a tree with one
// key per level (outermost first), so that sparse measurement grids work:
// a lookup interpolates along each level between the neighbouring keys
// that hold data, in log-log space (latency grows as a power of shape).
type Grid struct {
	dims int
	root *node
	rows int
}

type node struct {
	keys     []float64
	children []*node
	value    float64 // leaves only
	n        int     // measurements averaged into value
}

// NewGrid makes an empty grid over dims keys.
func NewGrid(dims int) *Grid { return &Grid{dims: dims, root: &node{}} }

// Dims is the number of keys.
func (g *Grid) Dims() int { return g.dims }

// Rows is the number of measurements added.
func (g *Grid) Rows() int { return g.rows }

// Add records a measurement; repeated keys are averaged.
func (g *Grid) Add(key []float64, latency float64) {
	if len(key) != g.dims || !(latency > 0) || math.IsInf(latency, 0) {
		return
	}
	n := g.leaf(key)
	n.value = (n.value*float64(n.n) + latency) / float64(n.n+1)
	n.n++
	g.rows++
}

// leaf is key's leaf, made (with the levels above it) where missing.
func (g *Grid) leaf(key []float64) *node {
	n := g.root
	for _, k := range key {
		i := sort.SearchFloat64s(n.keys, k)
		if i == len(n.keys) || n.keys[i] != k {
			n.keys = append(n.keys, 0)
			copy(n.keys[i+1:], n.keys[i:])
			n.keys[i] = k
			n.children = append(n.children, nil)
			copy(n.children[i+1:], n.children[i:])
			n.children[i] = &node{}
		}
		n = n.children[i]
	}
	return n
}

// leaves calls fn with every measured key (outermost first), its value
// and the measurements averaged into it, in key order. key is reused.
func (g *Grid) leaves(fn func(key []float64, v float64, n int)) {
	key := make([]float64, g.dims)
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		if depth == g.dims {
			if n.n > 0 {
				fn(key, n.value, n.n)
			}
			return
		}
		for i, k := range n.keys {
			key[depth] = k
			walk(n.children[i], depth+1)
		}
	}
	walk(g.root, 0)
}

// put sets a leaf to an average of n measurements, as leaves reported it;
// it checks what Add checks.
func (g *Grid) put(key []float64, v float64, n int) {
	if n < 1 || len(key) != g.dims || !(v > 0) || math.IsInf(v, 0) {
		return
	}
	l := g.leaf(key)
	g.rows += n - l.n
	l.n, l.value = n, v
}

// Lookup returns the latency at key and the key it answered for: key
// itself, except along a level with a single measured key, where it is that
// key (the caller scales from there by the roofline).
func (g *Grid) Lookup(key []float64) (latency float64, at []float64, ok bool) {
	if len(key) != g.dims || g.rows == 0 {
		return 0, nil, false
	}
	at = make([]float64, len(key))
	v, ok := lookup(g.root, key, at)
	return v, at, ok
}

func lookup(n *node, key, at []float64) (float64, bool) {
	if len(key) == 0 {
		return n.value, n.n > 0
	}
	x := key[0]
	ks := n.keys
	if len(ks) == 0 {
		return 0, false
	}
	// Outside the measured range, follow the end segment's log-log slope:
	// below the smallest key the slope is held between 0 and 1 (a smaller
	// shape is never slower, and launch and latency remain), above the
	// largest between 0 and 2 (causal attention grows with the square of
	// the prompt). A level with one key answers at that key; the caller
	// then scales by the roofline.
	if x < ks[0] {
		return extrapolate(n, 0, 1, x, 1, key, at)
	}
	if x > ks[len(ks)-1] {
		return extrapolate(n, len(ks)-1, len(ks)-2, x, 2, key, at)
	}
	i := sort.SearchFloat64s(ks, x)
	if ks[i] == x {
		at[0] = x
		if v, ok := lookup(n.children[i], key[1:], at[1:]); ok {
			return v, true
		}
	}
	at[0] = x
	// Neighbours below and above that answer the rest of the key.
	lo, hi := -1, -1
	var vlo, vhi float64
	atLo := make([]float64, len(at)-1)
	for j := i - 1; j >= 0; j-- {
		if v, ok := lookup(n.children[j], key[1:], atLo); ok {
			lo, vlo = j, v
			break
		}
	}
	atHi := make([]float64, len(at)-1)
	for j := i; j < len(ks); j++ {
		if ks[j] == x {
			continue
		}
		if v, ok := lookup(n.children[j], key[1:], atHi); ok {
			hi, vhi = j, v
			break
		}
	}
	switch {
	case lo >= 0 && hi >= 0:
		copy(at[1:], atLo)
		return interp(ks[lo], vlo, ks[hi], vhi, x), true
	case lo >= 0:
		at[0] = ks[lo]
		copy(at[1:], atLo)
		return vlo, true
	case hi >= 0:
		at[0] = ks[hi]
		copy(at[1:], atHi)
		return vhi, true
	}
	return 0, false
}

// interp interpolates between (x0, y0) and (x1, y1) at x: log-log where
// every value is positive (power laws stay straight), linear otherwise.
func interp(x0, y0, x1, y1, x float64) float64 {
	if x0 > 0 && x1 > 0 && x > 0 && y0 > 0 && y1 > 0 {
		t := math.Log(x/x0) / math.Log(x1/x0)
		return math.Exp(math.Log(y0) + t*(math.Log(y1)-math.Log(y0)))
	}
	t := (x - x0) / (x1 - x0)
	return y0 + t*(y1-y0)
}

// extrapolate answers x outside a level's keys from the edge key's child
// and its neighbour's, along their log-log slope clamped to [0, maxSlope].
func extrapolate(n *node, edge, next int, x, maxSlope float64, key, at []float64) (float64, bool) {
	ks := n.keys
	v0, ok := lookup(n.children[edge], key[1:], at[1:])
	if !ok {
		return 0, false
	}
	at[0] = ks[edge]
	if next < 0 || next >= len(ks) || x <= 0 || ks[edge] <= 0 || ks[next] <= 0 {
		return v0, true
	}
	scratch := make([]float64, len(at)-1)
	v1, ok := lookup(n.children[next], key[1:], scratch)
	if !ok || v1 <= 0 || v0 <= 0 {
		return v0, true
	}
	at[0] = x
	slope := min(max(math.Log(v1/v0)/math.Log(ks[next]/ks[edge]), 0), maxSlope)
	return v0 * math.Pow(x/ks[edge], slope), true
}
