package configure

import (
	"fmt"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// Describe names a candidate's shape: "agg 4 x h200_sxm tp2" or
// "disagg P 2 x h200_sxm tp1 + D 1 x h200_sxm tp4".
func Describe(c Config) string {
	pool := func(p *Pool) string {
		s := fmt.Sprintf("%d x %s tp%d", p.Workers, p.Device, p.TP)
		if p.PP > 1 {
			s += fmt.Sprintf(" pp%d", p.PP)
		}
		if p.DP > 1 {
			s += fmt.Sprintf(" dp%d", p.DP)
		}
		if p.EP > 1 {
			s += fmt.Sprintf(" ep%d", p.EP)
		}
		return s
	}
	if c.Agg != nil {
		return "agg " + pool(c.Agg)
	}
	if c.Prefill == nil || c.Decode == nil {
		return c.Mode
	}
	return "disagg P " + pool(c.Prefill) + " + D " + pool(c.Decode)
}

// explain says why the winner wins, why the runners-up lose, and which
// engines could not serve at all.
func (s *search) explain(res *Result) {
	var lines []string
	if res.Unreachable != nil {
		lines = append(lines, res.Unreachable.Message)
	}
	if res.Best == nil {
		res.Explain = lines
		return
	}
	best := res.Best
	best.Why = s.score(*best)
	if res.Pick == Autoscale && res.Engines != nil {
		best.Why += "; its prefill and decode engines are the best per GPU on their own, the units a planner scales"
	}
	if len(res.Candidates) > 0 {
		res.Candidates[0].Why = best.Why
	}
	lines = append(lines, fmt.Sprintf("#1 %s wins: %s. Binding: %s.", Describe(*best), best.Why, best.Binding))
	if t := decodeStepText(best.DecodeStep); t != "" {
		lines = append(lines, "#1's "+t+".")
	}
	for i := 1; i < len(res.Candidates); i++ {
		c := &res.Candidates[i]
		c.Why = s.whyLoses(*best, *c)
		if i < 6 {
			lines = append(lines, fmt.Sprintf("#%d %s: %s.", c.Rank, Describe(*c), c.Why))
		}
	}
	if alt := otherMode(res); alt != nil {
		lines = append(lines, fmt.Sprintf("Best %s candidate is #%d %s at %s.", alt.Mode, alt.Rank, Describe(*alt), s.score(*alt)))
	}
	for _, e := range s.engines {
		if e.err != nil || len(e.points) == 0 || e.role == "prefill" {
			continue
		}
		if _, ok := e.best(s.r); !ok {
			p := e.points[0]
			if e.role == "decode" { // a decode worker has no TTFT of its own
				lines = append(lines, fmt.Sprintf("%s %s misses the SLO even at batch 1 (ITL %.1f ms).", e.role, e.label(), p.ITLms))
			} else {
				lines = append(lines, fmt.Sprintf("%s %s misses the SLO even at batch 1 (TTFT %.0f ms, ITL %.1f ms).", e.role, e.label(), p.TTFTms, p.ITLms))
			}
		}
	}
	fits := 0
	for _, r := range res.Rejected {
		if strings.Contains(r.Reason, "does not fit") {
			fits++
		}
	}
	if fits > 0 {
		lines = append(lines, fmt.Sprintf("%d engine configurations do not hold the model and one request (KV memory); see rejected.", fits))
	}
	res.Explain = lines
}

// score states a candidate's result in the pick's terms.
func (s *search) score(c Config) string {
	per := fmt.Sprintf("%.0f tokens/s per GPU", c.TokensPerSPerGPU)
	if s.r.priced() {
		per = fmt.Sprintf("%.0f tokens per unit of price (%.2f/h)", c.TokensPerDollar, c.CostPerHour)
	}
	lat := fmt.Sprintf("TTFT %.0f ms, ITL %.1f ms", c.TTFTms, c.ITLms)
	if !c.MeetsSLO {
		return fmt.Sprintf("closest to the SLO (%s), %s", lat, per)
	}
	if s.r.Pick == LoadMatch {
		return fmt.Sprintf("serves the load on %.4g GPUs (%d devices), %s, %s", c.GPUs, c.Devices, per, lat)
	}
	return fmt.Sprintf("%s, %.0f tokens/s on %.4g GPUs, %s", per, c.TokensPerS, c.GPUs, lat)
}

// whyLoses compares a runner-up with the winner.
func (s *search) whyLoses(best, c Config) string {
	if !c.MeetsSLO {
		var over []string
		sl := s.r.SLA
		if sl.TTFTms > 0 && c.TTFTms > sl.TTFTms {
			over = append(over, fmt.Sprintf("TTFT %.0f > %g ms", c.TTFTms, sl.TTFTms))
		}
		if sl.ITLms > 0 && c.ITLms > sl.ITLms {
			over = append(over, fmt.Sprintf("ITL %.1f > %g ms", c.ITLms, sl.ITLms))
		}
		if sl.E2Ems > 0 && c.E2Ems > sl.E2Ems {
			over = append(over, fmt.Sprintf("E2E %.0f > %g ms", c.E2Ems, sl.E2Ems))
		}
		if len(over) == 0 {
			return "misses the SLO at the load; " + c.Binding
		}
		return "misses the SLO: " + strings.Join(over, ", ")
	}
	if s.r.Pick == LoadMatch {
		if s.r.priced() && c.CostPerHour > best.CostPerHour {
			return fmt.Sprintf("costs %.2f/h against %.2f/h; limit: %s", c.CostPerHour, best.CostPerHour, c.Binding)
		}
		if c.GPUs > best.GPUs {
			return fmt.Sprintf("needs %.4g GPUs against %.4g; limit: %s", c.GPUs, best.GPUs, c.Binding)
		}
	}
	eb, ec := best.TokensPerSPerGPU, c.TokensPerSPerGPU
	unit := "tokens/s per GPU"
	if s.r.priced() {
		eb, ec, unit = best.TokensPerDollar, c.TokensPerDollar, "tokens per unit of price"
	}
	if eb > 0 && ec < eb {
		return fmt.Sprintf("%.0f%% fewer %s (%.0f against %.0f); limit: %s", (1-ec/eb)*100, unit, ec, eb, c.Binding)
	}
	return fmt.Sprintf("as efficient (%.0f %s) but %.0f tokens/s in total against %.0f; limit: %s", ec, unit, c.TokensPerS, best.TokensPerS, c.Binding)
}

func otherMode(res *Result) *Config {
	for i := range res.Candidates {
		if c := &res.Candidates[i]; c.Mode != res.Best.Mode && c.MeetsSLO {
			return c
		}
	}
	return nil
}

// decodeStep is one decode step of e's engines at the deployment's
// operating point: its mean decoding batch per engine (workers x ranks;
// serving.Result.MeanDecoding), split into its parts.
func (s *search) decodeStep(e *engine, workers int, r *serving.Result) *estimate.StepShare {
	if e == nil || e.w == nil || r == nil || !r.Fits || workers < 1 {
		return nil
	}
	n := r.MeanDecoding(s.r.OSL, workers*max(e.dp, 1))
	st := estimate.DecodeStepShare(e.w, n, serving.Workload{ISL: s.r.ISL, OSL: s.r.OSL}.DecodeContext())
	return &st
}

// decodeStepText says where the step goes, largest parts first, leaving
// out parts under half a percent.
func decodeStepText(st *estimate.StepShare) string {
	if st == nil || st.Ms <= 0 {
		return ""
	}
	var out []string
	for _, p := range st.Largest() {
		if share := p.Ms / st.Ms; share >= 0.005 {
			out = append(out, fmt.Sprintf("%s %.0f%%", p.Name, 100*share))
		}
	}
	return fmt.Sprintf("decode step is %.1f ms at %d sequences an engine: %s", st.Ms, st.Sequences, strings.Join(out, ", "))
}
