package calibrate

import (
	"math"
	"sort"
	"testing"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// TestPromptIterationsShowInTPOT checks the engine loop's account of
// prompt interference against the measured aggregated runs. Where the
// estimate's breakdown puts at least a tenth of TPOT in iterations that
// carry prompts (the decoding sequences wait through them), the measured
// TPOT must show that share, per backend and dense or MoE: the median of
// (measured - decode steps) / predicted share within 0.75-1.35, and the
// TPOT error with the share below the error of decode steps alone.
// No parameter prices the share: it is the iteration-level loop itself.
func TestPromptIterationsShowInTPOT(t *testing.T) {
	ds, env := loadShared(t)
	var cases []Case
	for _, c := range ds.Cases {
		if c.Mode == "agg" && c.Source == "silicon" && c.TPOTms > 0 {
			cases = append(cases, c)
		}
	}
	type row struct {
		kind                  string
		shown, full, decoding float64
	}
	var rows []row
	for _, c := range cases {
		q := c.Query
		q.Breakdown = true
		h := c.Harness
		if h == "" {
			h = DefaultHarness
		}
		out, err := estimate.Run(env, q, serving.Options{Harness: h})
		if err != nil || out.Breakdown == nil || out.Breakdown.TPOTRestMs < 0.1*out.TPOTms {
			continue
		}
		b := out.Breakdown
		kind := c.Backend + "/moe"
		if c.Dense {
			kind = c.Backend + "/dense"
		}
		rows = append(rows, row{kind: kind, shown: (c.TPOTms - b.TPOTDecodeMs) / b.TPOTRestMs,
			full: math.Abs(out.TPOTms/c.TPOTms - 1), decoding: math.Abs(b.TPOTDecodeMs/c.TPOTms - 1)})
	}
	byKind := map[string][]row{}
	for _, r := range rows {
		byKind[r.kind] = append(byKind[r.kind], r)
	}
	if len(byKind) < 4 {
		t.Fatalf("runs with a prompt share: %d kinds", len(byKind))
	}
	for kind, rs := range byKind {
		shown := make([]float64, len(rs))
		var full, decoding float64
		for i, r := range rs {
			shown[i], full, decoding = r.shown, full+r.full, decoding+r.decoding
		}
		sort.Float64s(shown)
		med := shown[len(shown)/2]
		full, decoding = 100*full/float64(len(rs)), 100*decoding/float64(len(rs))
		t.Logf("%-14s %3d runs: measured share of the predicted prompt iterations, median %.2f; TPOT MAPE %.1f%% with them, %.1f%% with decode steps alone", kind, len(rs), med, full, decoding)
		if len(rs) < 20 {
			continue // too few to hold to a median
		}
		if med < 0.75 || med > 1.35 || full >= decoding {
			t.Errorf("%s: median share %.2f, TPOT MAPE %.1f%% against %.1f%% without the prompt iterations", kind, med, full, decoding)
		}
	}
}
