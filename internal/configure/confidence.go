package configure

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// atConfidence is the SLA the predictions must meet so that measured
// latencies meet r.SLA with probability r.Confidence: each target divided
// by the factor a prediction of its kind stays under at that confidence,
// the largest over the modes searched (a mode without a spread of its own
// takes the aggregated one). E2E takes the larger of the two.
func atConfidence(env Env, r *Request) (SLA, error) {
	be, err := perf.ParseBackend(r.Backend)
	if err != nil {
		return SLA{}, fmt.Errorf("backend: %w", err)
	}
	m, err := env.Catalog.Model(r.Model)
	if err != nil {
		return SLA{}, fmt.Errorf("model: %w", err)
	}
	modes := r.Modes
	if len(modes) == 0 {
		modes = []string{"agg", "disagg"}
	}
	ttft, tpot := 0.0, 0.0
	var missing []string
	for _, mode := range modes {
		key := perf.IntervalKey(be, m.MoE != nil, mode)
		k, why := env.Params.IntervalFor(key)
		if k == nil && why == "" {
			// The same engine model prices both modes: a mode with no
			// measured spread of its own takes the aggregated one.
			k, why = env.Params.IntervalFor(perf.IntervalKey(be, m.MoE != nil, "agg"))
		}
		if why != "" {
			return SLA{}, fmt.Errorf("confidence: %s", why)
		}
		if k == nil {
			missing = append(missing, key)
			continue
		}
		ttft = math.Max(ttft, k.TTFT.Upper(1, r.Confidence))
		tpot = math.Max(tpot, k.TPOT.Upper(1, r.Confidence))
	}
	if len(missing) > 0 {
		return SLA{}, fmt.Errorf("confidence: the parameters hold no held-out spread for %s runs; search the modes they cover (--mode), or leave out --confidence",
			strings.Join(missing, ", "))
	}
	s := r.SLA
	s.TTFTms /= ttft
	s.ITLms /= tpot
	s.E2Ems /= math.Max(ttft, tpot)
	return s, nil
}
