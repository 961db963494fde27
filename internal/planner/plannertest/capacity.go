// Package plannertest holds a fake capacity model for planner tests.
package plannertest

import "math"

// Capacity is a linear stand-in for the performance model: a prefill
// replica takes PrefillRPS req/s and a decode replica DecodeRPS at any
// size; latencies are Base plus M/D/1-like queueing.
type Capacity struct {
	PrefillRPS, DecodeRPS float64
	TTFTBase, ITLBase     float64
}

// PrefillTTFT implements planner.Capacity.
// The fake ignores the percentile: its latencies are deterministic.
func (c Capacity) PrefillTTFT(_, rate, _ float64) float64 {
	rho := rate / c.PrefillRPS
	if rho >= 1 {
		return math.Inf(1)
	}
	return c.TTFTBase * (1 + rho/(2*(1-rho)))
}

// PrefillRate implements planner.Capacity.
func (c Capacity) PrefillRate(_, ttftMs, _ float64) float64 {
	if ttftMs < c.TTFTBase {
		return 0
	}
	return c.PrefillRPS * math.Min(1, ttftMs/(2*c.TTFTBase))
}

// DecodeITL implements planner.Capacity.
func (c Capacity) DecodeITL(_, _, batch float64) float64 { return c.ITLBase * (1 + batch/64) }

// DecodeRate implements planner.Capacity.
func (c Capacity) DecodeRate(_, _, itlMs float64) float64 {
	if itlMs < c.ITLBase {
		return 0
	}
	return c.DecodeRPS
}
