package scenario

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/workload"
)

// Bounds on one run, so that no number in a file can make it run for days
// or exhaust memory: the work is estimated before it is done.
const (
	MaxDurationSeconds = 30 * 24 * 3600 // a month of simulated time
	MaxRequests        = 20_000_000     // expected arrivals of a run
	MaxSeriesPoints    = 1_000_000      // per-interval points kept
	MaxReplicas        = 10_000         // workers (and attention-DP ranks) a pool starts with
	MaxUsers           = 1_000_000      // concurrent users
	MaxTokens          = 10_000_000     // tokens of one request
	minIntervalSeconds = 0.1
)

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkLimits names the first field that is nonsense or would make the run
// unbounded, with its value and the range allowed.
func (s *Scenario) checkLimits() error {
	d := s.DurationSeconds
	switch {
	case !finite(d) || d <= 0 || d > MaxDurationSeconds:
		return fmt.Errorf("durationSeconds: %g must be in (0, %d] (a month)", d, MaxDurationSeconds)
	case !finite(s.IntervalSeconds) || s.IntervalSeconds < 0 || s.IntervalSeconds > 0 && s.IntervalSeconds < minIntervalSeconds:
		return fmt.Errorf("intervalSeconds: %g must be 0 (the default, 10 s) or at least %g", s.IntervalSeconds, minIntervalSeconds)
	case s.IntervalSeconds > 0 && d/s.IntervalSeconds > MaxSeriesPoints:
		return fmt.Errorf("intervalSeconds: %g over durationSeconds %g makes %.3g series points, at most %d; widen the interval", s.IntervalSeconds, d, d/s.IntervalSeconds, MaxSeriesPoints)
	case !finite(s.Deployment.StartupDelaySeconds) || s.Deployment.StartupDelaySeconds < 0:
		return fmt.Errorf("deployment.startupDelaySeconds: %g must be >= 0", s.Deployment.StartupDelaySeconds)
	}
	if d/10 > MaxSeriesPoints && s.IntervalSeconds == 0 {
		return fmt.Errorf("durationSeconds: %g at the default 10 s interval makes too many series points; set intervalSeconds", d)
	}
	for name, p := range map[string]*Pool{"agg": s.Deployment.Agg, "prefill": s.Deployment.Prefill, "decode": s.Deployment.Decode} {
		if p != nil && (p.Replicas < 0 || p.Replicas > MaxReplicas) {
			return fmt.Errorf("deployment.%s.replicas: %d must be 0 to %d", name, p.Replicas, MaxReplicas)
		}
		if p != nil && p.DP > 1 && (p.DP > MaxReplicas || p.engines() > MaxReplicas) {
			return fmt.Errorf("deployment.%s: %d replicas of dp %d make %.0f engines, at most %d; use fewer replicas or a smaller dp", name, p.Replicas, p.DP, float64(p.Replicas)*float64(p.DP), MaxReplicas)
		}
	}
	w := s.Workload
	for _, ds := range []struct {
		field string
		d     *DistSpec
	}{{"workload.isl", w.ISL}, {"workload.osl", w.OSL}} {
		if err := ds.d.check(ds.field); err != nil {
			return err
		}
	}
	// late refuses a change that starts at or after the run's end: it
	// would never happen.
	late := func(field string, start float64, so string) error {
		return fmt.Errorf("%s %g is at or past the scenario's end (durationSeconds %g), so %s; start it earlier or run longer", field, start, d, so)
	}
	if w.Rate != nil {
		peak, err := w.Rate.peak()
		if err != nil {
			return err
		}
		if n := peak * d; n > MaxRequests {
			return fmt.Errorf("workload.rate: up to %.3g req/s over %g s is about %.3g requests, at most %d a run; lower the rate or durationSeconds", peak, d, n, MaxRequests)
		}
		switch r := w.Rate; {
		case r.Step != nil && r.Step.Start >= d:
			return late("workload.rate.step: start", r.Step.Start, "the rate never changes")
		case r.Ramp != nil && r.Ramp.Start >= d:
			return late("workload.rate.ramp: start", r.Ramp.Start, "the rate never changes")
		}
	}
	if u := w.Users; u != nil && (u.N > MaxUsers || u.ThinkMs < 0 || !finite(u.RampSeconds) || u.RampSeconds < 0) {
		return fmt.Errorf("workload.users: count %d must be 1 to %d, thinkMs %d and rampSeconds %g >= 0", u.N, MaxUsers, u.ThinkMs, u.RampSeconds)
	}
	if b := w.Burst; b != nil {
		switch {
		case b.N > MaxUsers:
			return fmt.Errorf("workload.burst.count: %d must be at most %d", b.N, MaxUsers)
		case !finite(b.StartSeconds) || !finite(b.DurationSeconds) || !finite(b.RampSeconds):
			return fmt.Errorf("workload.burst: startSeconds, durationSeconds and rampSeconds must be finite")
		case b.StartSeconds >= d:
			return late("workload.burst.startSeconds:", b.StartSeconds, "the burst would never start")
		case b.DurationSeconds > 0 && b.RampSeconds > b.DurationSeconds:
			return fmt.Errorf("workload.burst.rampSeconds: %g is longer than the burst (durationSeconds %g), so not every user would arrive; shorten the ramp", b.RampSeconds, b.DurationSeconds)
		}
		for _, ds := range []struct {
			field string
			d     *DistSpec
		}{{"workload.burst.isl", b.ISL}, {"workload.burst.osl", b.OSL}, {"workload.burst.thinkMs", b.ThinkMs}} {
			if err := ds.d.check(ds.field); err != nil {
				return err
			}
		}
	}
	if t := w.Trace; t != nil {
		switch {
		case !finite(t.Speedup) || t.Speedup < 0 || t.Speedup > 1e6:
			return fmt.Errorf("workload.trace.speedup: %g must be in (0, 1e6] (0: 1)", t.Speedup)
		case !finite(t.From) || !finite(t.To) || t.From < 0 || t.To < 0 || t.To > 0 && t.To < t.From:
			return fmt.Errorf("workload.trace: fromSeconds %g and toSeconds %g must be >= 0 with from <= to", t.From, t.To)
		}
	}
	return nil
}

// check refuses sizes that are nonsense or collapse: a log-normal median
// below one token makes every request one token long, and bounds on the
// wrong side of the centre clip most draws to the bound.
func (ds *DistSpec) check(field string) error {
	if ds == nil {
		return nil
	}
	minmax := func(name, centreName string, centre float64, lo, hi int) error {
		switch {
		case lo < 0 || hi < 0:
			return fmt.Errorf("%s.%s: min %d and max %d must be >= 0 (0: unbounded)", field, name, lo, hi)
		case hi > 0 && lo > hi:
			return fmt.Errorf("%s.%s: min %d is above max %d", field, name, lo, hi)
		case hi > MaxTokens:
			return fmt.Errorf("%s.%s.max: %d must be at most %d", field, name, hi, MaxTokens)
		case hi > 0 && float64(hi) < centre:
			return fmt.Errorf("%s.%s: max %d is below the %s %g, so most sizes would be clipped to %d; raise max above the %s (or give fixed: %d)", field, name, hi, centreName, centre, hi, centreName, hi)
		case lo > 0 && float64(lo) > centre:
			return fmt.Errorf("%s.%s: min %d is above the %s %g, so most sizes would be raised to %d; lower min below the %s (or give fixed: %d)", field, name, lo, centreName, centre, lo, centreName, lo)
		}
		return nil
	}
	switch {
	case ds.Fixed != nil && (*ds.Fixed < 0 || *ds.Fixed > MaxTokens):
		return fmt.Errorf("%s.fixed: %d must be 1 to %d", field, *ds.Fixed, MaxTokens)
	case ds.Normal != nil:
		n := ds.Normal
		if !finite(n.Mean) || !finite(n.Std) || n.Mean < 1 || n.Mean > MaxTokens || n.Std < 0 {
			return fmt.Errorf("%s.normal: mean %g must be 1 to %d and std %g >= 0", field, n.Mean, MaxTokens, n.Std)
		}
		return minmax("normal", "mean", n.Mean, n.Min, n.Max)
	case ds.LogNormal != nil:
		l := ds.LogNormal
		if !finite(l.Median) || !finite(l.Sigma) || l.Median < 1 || l.Median > MaxTokens || l.Sigma < 0 || l.Sigma > 5 {
			return fmt.Errorf("%s.lognormal: median %g must be 1 to %d (below 1 every size collapses to 1) and sigma %g in [0, 5]", field, l.Median, MaxTokens, l.Sigma)
		}
		return minmax("lognormal", "median", l.Median, l.Min, l.Max)
	}
	return nil
}

// peak is the rate profile's highest rate, after checking its fields.
func (r *RateSpec) peak() (float64, error) {
	bad := func(name string, vs ...float64) error {
		for _, v := range vs {
			if !finite(v) || v < 0 {
				return fmt.Errorf("workload.rate.%s: %v must be finite and >= 0", name, vs)
			}
		}
		return nil
	}
	switch {
	case r.Constant != nil:
		return *r.Constant, bad("constant", *r.Constant)
	case r.Step != nil:
		return window("step", r.Step.Base, r.Step.Peak, r.Step.Start, r.Step.End)
	case r.Ramp != nil:
		return window("ramp", r.Ramp.From, r.Ramp.To, r.Ramp.Start, r.Ramp.End)
	case r.Diurnal != nil:
		dn := r.Diurnal
		if err := bad("diurnal", dn.Mean, dn.Period); err != nil {
			return 0, err
		}
		if !finite(dn.Amplitude) || dn.Amplitude < 0 || dn.Amplitude > 1 || dn.Period <= 0 || !finite(dn.Phase) {
			return 0, fmt.Errorf("workload.rate.diurnal: amplitude %g must be in [0, 1] and period %g > 0", dn.Amplitude, dn.Period)
		}
		return workload.Diurnal(*dn).Max(0), nil
	}
	return 0, nil
}

// window checks a profile that moves between two rates over [start, end]
// and returns the higher rate.
func window(name string, a, b, start, end float64) (float64, error) {
	for _, v := range []float64{a, b, start, end} {
		if !finite(v) || v < 0 {
			return 0, fmt.Errorf("workload.rate.%s: %v must be finite and >= 0", name, []float64{a, b, start, end})
		}
	}
	if end < start {
		return 0, fmt.Errorf("workload.rate.%s: end %g is before start %g", name, end, start)
	}
	return math.Max(a, b), nil
}
