package plansim

import (
	"math"
	"testing"

	"github.com/gpuplane/gpuplane/internal/sim"
)

// Observe weights the interval means by their counts and reads the queue
// and KV use of the last interval.
func TestObserveFoldsIntervals(t *testing.T) {
	pts := []sim.Point{
		{Arrivals: 10, Completions: 5, ISLMean: 1000, OSLMean: 100, TTFTMeanms: 100, ITLMeanms: 10,
			PoolInFlight: map[string]int{PrefillPool: 9}, PoolKVUse: map[string]float64{DecodePool: 0.1}},
		{Arrivals: 30, Completions: 15, ISLMean: 3000, OSLMean: 300, TTFTMeanms: 300, ITLMeanms: 20,
			PoolInFlight: map[string]int{PrefillPool: 4}, PoolKVUse: map[string]float64{DecodePool: 0.7}},
	}
	o := Observe(pts, 20, 20, 2, 1, 0, 0)
	if o.Requests != 40 || o.MeanISL != 2500 || o.MeanOSL != 250 || o.TTFTms != 250 || math.Abs(o.ITLms-17.5) > 1e-9 {
		t.Errorf("folded %+v", o)
	}
	if o.QueueDepth != 4 || o.KVUse != 0.7 || o.Prefill != 2 || o.Decode != 1 || o.Stale {
		t.Errorf("last-interval state %+v", o)
	}
	if s := Observe(nil, 20, 20, 1, 1, 0, 0); !s.Stale {
		t.Error("no closed interval must be stale")
	}
}
