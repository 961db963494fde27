package scenario

import (
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/gpuplane/gpuplane/internal/sim"
	"github.com/gpuplane/gpuplane/internal/workload"
)

func (d *DistSpec) build(field string) (workload.Dist, error) {
	if d == nil {
		return nil, fmt.Errorf("workload.%s: missing (fixed, normal or lognormal)", field)
	}
	n := 0
	var out workload.Dist
	if d.Fixed != nil {
		if *d.Fixed < 1 {
			return nil, fmt.Errorf("workload.%s.fixed: must be >= 1", field)
		}
		out, n = workload.Fixed{N: *d.Fixed}, n+1
	}
	if d.Normal != nil {
		out, n = *d.Normal, n+1
	}
	if d.LogNormal != nil {
		out, n = *d.LogNormal, n+1
	}
	if n != 1 {
		return nil, fmt.Errorf("workload.%s: give exactly one of fixed, normal, lognormal", field)
	}
	return out, nil
}

func (r *RateSpec) build() (workload.Rate, error) {
	if r == nil {
		return nil, fmt.Errorf("workload.rate: missing (constant, step, ramp or diurnal)")
	}
	n := 0
	var out workload.Rate
	if r.Constant != nil {
		out, n = workload.Constant(*r.Constant), n+1
	}
	if r.Step != nil {
		out, n = *r.Step, n+1
	}
	if r.Ramp != nil {
		out, n = *r.Ramp, n+1
	}
	if r.Diurnal != nil {
		out, n = *r.Diurnal, n+1
	}
	if n != 1 {
		return nil, fmt.Errorf("workload.rate: give exactly one of constant, step, ramp, diurnal")
	}
	return out, nil
}

func buildWorkload(s *Scenario, rng *rand.Rand) (workload.Source, *sim.Users, error) {
	src, users, err := baseWorkload(s, rng)
	if err != nil || s.Workload.Burst == nil {
		return src, users, err
	}
	if users != nil {
		return nil, nil, fmt.Errorf("workload.burst: adds users to poisson or trace traffic; kind users already is a crowd")
	}
	b := s.Workload.Burst
	switch {
	case b.N < 1:
		return nil, nil, fmt.Errorf("workload.burst.count: %d must be >= 1", b.N)
	case b.StartSeconds < 0 || b.DurationSeconds <= 0:
		return nil, nil, fmt.Errorf("workload.burst: startSeconds >= 0 and durationSeconds > 0")
	case b.RampSeconds < 0:
		return nil, nil, fmt.Errorf("workload.burst.rampSeconds: must be >= 0")
	}
	isl, err := b.ISL.build("burst.isl")
	if err != nil {
		return nil, nil, err
	}
	osl, err := b.OSL.build("burst.osl")
	if err != nil {
		return nil, nil, err
	}
	var think workload.Dist
	if b.ThinkMs != nil {
		if think, err = b.ThinkMs.build("burst.thinkMs"); err != nil {
			return nil, nil, err
		}
	}
	return src, &sim.Users{N: b.N, ISL: isl, OSL: osl, Think: think, Start: b.StartSeconds,
		Duration: b.StartSeconds + b.DurationSeconds, Ramp: b.RampSeconds, Rng: rng}, nil
}

func baseWorkload(s *Scenario, rng *rand.Rand) (workload.Source, *sim.Users, error) {
	w := s.Workload
	sizes := func() (isl, osl workload.Dist, err error) {
		if isl, err = w.ISL.build("isl"); err == nil {
			osl, err = w.OSL.build("osl")
		}
		return isl, osl, err
	}
	switch w.Kind {
	case "poisson":
		rate, err := w.Rate.build()
		if err != nil {
			return nil, nil, err
		}
		isl, osl, err := sizes()
		if err != nil {
			return nil, nil, err
		}
		p, err := workload.NewPoisson(rate, isl, osl, s.DurationSeconds, rng)
		return p, nil, err
	case "users":
		if w.Users == nil || w.Users.N < 1 {
			return nil, nil, fmt.Errorf("workload.users.count: must be >= 1")
		}
		isl, osl, err := sizes()
		if err != nil {
			return nil, nil, err
		}
		return nil, &sim.Users{N: w.Users.N, ISL: isl, OSL: osl, Think: workload.Fixed{N: max(w.Users.ThinkMs, 0)},
			Ramp: w.Users.RampSeconds, Duration: s.DurationSeconds, Rng: rng}, nil
	case "trace":
		t := w.Trace
		if t == nil || t.File == "" {
			return nil, nil, fmt.Errorf("workload.trace.file: missing")
		}
		f, err := os.Open(t.File)
		if err != nil {
			return nil, nil, fmt.Errorf("workload.trace.file: %w", err)
		}
		to := t.To
		if to == 0 {
			to = t.From + s.DurationSeconds*max(t.Speedup, 1)
		}
		r, err := workload.NewReplay(f, t.Format, workload.ReplayOptions{Speedup: t.Speedup, From: t.From, To: to})
		return r, nil, err
	}
	return nil, nil, fmt.Errorf("workload.kind: %q is not poisson, users or trace", w.Kind)
}

// typical is the distribution's central value (0 when unknown, e.g. traces).
func (d *DistSpec) typical() int {
	switch {
	case d == nil:
		return 0
	case d.Fixed != nil:
		return *d.Fixed
	case d.Normal != nil:
		return int(d.Normal.Mean)
	case d.LogNormal != nil:
		return int(d.LogNormal.Median)
	}
	return 0
}

// unusedSections refuses a section the deployment mode or the workload
// kind would not read: a user who wrote it expects it to count.
func unusedSections(s *Scenario) error {
	d, w := s.Deployment, s.Workload
	disagg := d.Mode == "disagg"
	for _, sec := range []struct {
		name   string
		given  bool
		unused bool
		why    string
	}{
		{"deployment.agg", d.Agg != nil, disagg, "mode disagg runs deployment.prefill and deployment.decode"},
		{"deployment.prefill", d.Prefill != nil, !disagg, "mode agg runs deployment.agg"},
		{"deployment.decode", d.Decode != nil, !disagg, "mode agg runs deployment.agg"},
		{"workload.rate", w.Rate != nil, w.Kind != "poisson", "only kind poisson arrives at a rate"},
		{"workload.users", w.Users != nil, w.Kind != "users", "only kind users reads it"},
		{"workload.trace", w.Trace != nil, w.Kind != "trace", "only kind trace replays a file"},
		{"workload.isl", w.ISL != nil, w.Kind == "trace", "the trace gives each request's sizes"},
		{"workload.osl", w.OSL != nil, w.Kind == "trace", "the trace gives each request's sizes"},
	} {
		if sec.given && sec.unused {
			return fmt.Errorf("%s: not used here (%s); remove it or change the mode or kind", sec.name, sec.why)
		}
	}
	return nil
}
