// Package plan turns a ServingDeployment's spec and the cluster's free
// devices into configure's request, and configure's result into the
// object's status plan. It is pure: no API calls, no clock.
package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Backend is the engine the performance model plans for: the emulated
// engine runs vLLM's scheduler.
func Backend(spec *v1alpha1.ServingDeploymentSpec) string {
	switch spec.Engine.Backend {
	case "", "emulate":
		return "vllm"
	}
	return spec.Engine.Backend
}

// Percentile reads the SLO's percentile: "mean" or "" is 0, "p90" is 90.
func Percentile(s string) (float64, error) {
	if s == "" || s == "mean" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(s, "p"), 64)
	if err != nil || !strings.HasPrefix(s, "p") || !(v >= 50 && v <= 99.9) {
		return 0, fmt.Errorf("spec.slo.percentile: %q is not mean or p50 to p99.9 (e.g. p90)", s)
	}
	return v, nil
}

// Acceptance is the draft's acceptance length as written ("2.4" is 2.4,
// where the quantity's approximation would give 2.4000000000000004).
func Acceptance(s *v1alpha1.SpeculativeSpec) float64 {
	v, err := strconv.ParseFloat(s.AcceptanceLength.AsDec().String(), 64)
	if err != nil {
		return s.AcceptanceLength.AsApproximateFloat64()
	}
	return v
}

// Request is configure's search for the spec on the free devices; maxGPUs
// bounds the physical GPUs (the smaller of the budget and what is free).
func Request(spec *v1alpha1.ServingDeploymentSpec, pool []configure.PoolEntry, maxGPUs int) (configure.Request, error) {
	pct, err := Percentile(spec.SLO.Percentile)
	if err != nil {
		return configure.Request{}, err
	}
	r := configure.Request{
		Model:     spec.Model.Name,
		Precision: spec.Engine.Precision,
		Backend:   Backend(spec),
		ISL:       int(spec.Traffic.InputTokens),
		OSL:       int(spec.Traffic.OutputTokens),
		SLA: configure.SLA{TTFTms: float64(spec.SLO.TTFTMilliseconds), ITLms: float64(spec.SLO.ITLMilliseconds),
			TTFTPercentile: pct, ITLPercentile: pct},
		Pool:    pool,
		MaxGPUs: float64(maxGPUs),
		Modes:   spec.Serving.Modes,
		Top:     3,
	}
	if w, kv, ok := strings.Cut(r.Precision, "/"); ok {
		r.Precision, r.KVPrecision = w, kv
	}
	if s := spec.Engine.Speculative; s != nil {
		r.SpecTokens, r.SpecAccept = int(s.Tokens), Acceptance(s)
		if err := perf.CheckSpec(r.SpecTokens, r.SpecAccept); err != nil {
			return configure.Request{}, fmt.Errorf("spec.engine.speculative (tokens %d, acceptanceLength %s): %w", s.Tokens, s.AcceptanceLength.String(), err)
		}
	}
	switch {
	case spec.Traffic.RequestsPerSecond != nil:
		rps := spec.Traffic.RequestsPerSecond.AsApproximateFloat64()
		if !(rps > 0) {
			return configure.Request{}, fmt.Errorf("spec.traffic.requestsPerSecond: %s must be > 0 (or leave it out to size for the best throughput)", spec.Traffic.RequestsPerSecond)
		}
		r.RequestRate, r.Pick = rps, configure.LoadMatch
	case spec.Traffic.Users > 0:
		r.Concurrency, r.Pick = int(spec.Traffic.Users), configure.LoadMatch
	}
	if len(pool) == 0 {
		return r, fmt.Errorf("no free device matches spec.devices")
	}
	return r, r.Validate()
}

// Status is the plan for the object's status.
func Status(res *configure.Result) *v1alpha1.Plan {
	c := res.Best
	p := &v1alpha1.Plan{
		Mode:            c.Mode,
		TTFT:            ms(c.TTFTms),
		ITL:             ms(c.ITLms),
		TokensPerSecond: strconv.FormatFloat(c.TokensPerS, 'f', 0, 64),
		GPUs:            strconv.FormatFloat(c.GPUs, 'f', -1, 64),
		Binding:         c.Binding,
	}
	for _, pool := range []*configure.Pool{c.Agg, c.Prefill, c.Decode} {
		if pool == nil {
			continue
		}
		if p.Device == "" {
			p.Device = pool.Device
		} else if p.Device != pool.Device {
			p.Device += "," + pool.Device
		}
		p.Pools = append(p.Pools, v1alpha1.PoolPlan{Role: pool.Role, Device: pool.Device, TP: int32(pool.TP),
			PP: int32(pool.PP), EP: int32(pool.EP), DP: int32(pool.DP),
			Workers: int32(pool.Workers * max(c.Copies, 1)), Batch: int32(pool.Batch)})
	}
	return p
}

// Unmet says why nothing meets the SLO and what comes closest.
func Unmet(res *configure.Result) string {
	var b strings.Builder
	if res.Unreachable != nil {
		b.WriteString(res.Unreachable.Message)
	} else {
		b.WriteString("no deployment on the free devices meets the SLO")
	}
	if len(res.Candidates) > 0 {
		c := res.Candidates[0]
		fmt.Fprintf(&b, "; closest: %s (TTFT %s, ITL %s)", configure.Describe(c), ms(c.TTFTms), ms(c.ITLms))
	}
	return b.String()
}

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "ms" }
