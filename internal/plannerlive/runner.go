package plannerlive

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuplane/gpuplane/internal/planner"
)

// MetricsSource reads the last interval's traffic; on missing data it
// returns a stale observation saying why.
type MetricsSource interface {
	Observe(ctx context.Context, now time.Time) planner.Observation
}

// Scaler reads and sets one pool's replicas.
type Scaler interface {
	Replicas(ctx context.Context) (int, error)
	SetReplicas(ctx context.Context, n int) error
}

// Runner ties the planner core to live metrics and scaling.
type Runner struct {
	Planner         *planner.Planner
	Metrics         MetricsSource
	Prefill, Decode Scaler
	// DryRun (advisory mode) reports decisions without scaling.
	DryRun bool
	Log    logr.Logger
	// OnDecision, when set, receives every tick's decision and its outcome
	// (scaled, advised, unchanged, held, failed).
	OnDecision func(d planner.Decision, outcome string)

	desired, current *prometheus.GaugeVec
	predicted        prometheus.Gauge
	correction       *prometheus.GaugeVec
	ticks            *prometheus.CounterVec
	lastOK           time.Time
}

// Register creates the runner's metrics on reg.
func (r *Runner) Register(reg prometheus.Registerer) error {
	r.desired = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuplane_planner_desired_replicas", Help: "Replicas the planner wants per pool."}, []string{"pool"})
	r.current = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuplane_planner_current_replicas", Help: "Replicas the pool had at the last tick."}, []string{"pool"})
	r.predicted = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuplane_planner_predicted_request_rate", Help: "Request rate predicted one start-up delay ahead (req/s)."})
	r.correction = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuplane_planner_latency_correction", Help: "Observed over modelled latency per pool."}, []string{"pool"})
	r.ticks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuplane_planner_decisions_total", Help: "Planner ticks by outcome."}, []string{"outcome"})
	for _, c := range []prometheus.Collector{r.desired, r.current, r.predicted, r.correction, r.ticks} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register planner metrics: %w", err)
		}
	}
	return nil
}

// Tick observes, decides and (unless DryRun) scales once.
func (r *Runner) Tick(ctx context.Context, now time.Time) (planner.Decision, error) {
	// Every upstream call ends inside the interval: a hung Prometheus or
	// API server costs one tick, never the loop.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(0.8*r.Planner.Config().Interval*float64(time.Second)))
	defer cancel()
	o := r.Metrics.Observe(ctx, now)
	pre, err := r.Prefill.Replicas(ctx)
	if err != nil {
		return planner.Decision{}, err
	}
	dec, err := r.Decode.Replicas(ctx)
	if err != nil {
		return planner.Decision{}, err
	}
	o.Prefill, o.Decode = pre, dec
	if o.Interval == 0 && !o.Stale {
		o.Interval = r.Planner.Config().Interval
	}
	d := r.Planner.Tick(o)
	outcome := "scaled"
	switch {
	case d.Held:
		outcome = "held"
	case d.Prefill == pre && d.Decode == dec:
		outcome = "unchanged"
	case r.DryRun:
		outcome = "advised"
	}
	if r.ticks != nil {
		r.current.WithLabelValues("prefill").Set(float64(pre))
		r.current.WithLabelValues("decode").Set(float64(dec))
		r.desired.WithLabelValues("prefill").Set(float64(d.Prefill))
		r.desired.WithLabelValues("decode").Set(float64(d.Decode))
		r.predicted.Set(d.PredictedRate)
		r.correction.WithLabelValues("prefill").Set(d.PrefillCorrection)
		r.correction.WithLabelValues("decode").Set(d.DecodeCorrection)
	}
	var errs []error
	switch {
	case r.DryRun && !d.Held:
		// A pool without a cluster behind it follows the advice.
		for _, p := range []struct {
			s Scaler
			n int
		}{{r.Prefill, d.Prefill}, {r.Decode, d.Decode}} {
			if a, ok := p.s.(*Advised); ok {
				a.Advise(p.n)
			}
		}
	case !d.Held:
		// Each pool on its own: a failed prefill scale must not keep decode where it is.
		if d.Prefill != pre {
			if err := r.Prefill.SetReplicas(ctx, d.Prefill); err != nil {
				errs = append(errs, fmt.Errorf("scale prefill to %d: %w", d.Prefill, err))
			}
		}
		if d.Decode != dec {
			if err := r.Decode.SetReplicas(ctx, d.Decode); err != nil {
				errs = append(errs, fmt.Errorf("scale decode to %d: %w", d.Decode, err))
			}
		}
	}
	if len(errs) > 0 {
		outcome = "failed"
	}
	if r.ticks != nil {
		r.ticks.WithLabelValues(outcome).Inc()
	}
	r.Log.Info("planner decision", "outcome", outcome, "prefill", d.Prefill, "decode", d.Decode, "was", fmt.Sprintf("%d+%d", pre, dec),
		"predicted_rps", d.PredictedRate, "observed_rps", d.ObservedRate, "reason", d.Reason)
	if r.OnDecision != nil {
		r.OnDecision(d, outcome)
	}
	if len(errs) > 0 {
		return d, errors.Join(errs...)
	}
	r.lastOK = now
	return d, nil
}

// Advised is a pool with no cluster behind it, for a dry run without one:
// it starts at a given size and then holds whatever the planner advised.
type Advised struct {
	mu sync.Mutex
	n  int
}

// NewAdvised starts a pool at n replicas.
func NewAdvised(n int) *Advised { return &Advised{n: n} }

// Replicas implements Scaler.
func (a *Advised) Replicas(context.Context) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n, nil
}

// SetReplicas implements Scaler.
func (a *Advised) SetReplicas(_ context.Context, n int) error {
	a.Advise(n)
	return nil
}

// Advise records the planner's advice.
func (a *Advised) Advise(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n = n
}

// Run ticks every planner interval until ctx ends; a failed tick is logged
// and retried at the next one.
func (r *Runner) Run(ctx context.Context) error {
	t := time.NewTicker(time.Duration(r.Planner.Config().Interval * float64(time.Second)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if _, err := r.Tick(ctx, now); err != nil {
				r.Log.Error(err, "planner tick failed")
			}
		}
	}
}

// Handler serves /metrics from reg and /healthz, which fails once no tick
// has succeeded for three intervals.
func (r *Runner) Handler(reg prometheus.Gatherer, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	start := now()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		limit := time.Duration(3 * r.Planner.Config().Interval * float64(time.Second))
		last := r.lastOK
		if last.IsZero() {
			last = start
		}
		if now().Sub(last) > limit {
			http.Error(w, fmt.Sprintf("no successful planner tick since %s", last.Format(time.RFC3339)), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// Listen binds the endpoints' address, so that a busy port fails the
// start rather than surfacing at exit.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w (set listen: in the config to another address)", addr, err)
	}
	return l, nil
}

// Serve runs the HTTP endpoints on l until ctx ends.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", l.Addr(), err)
	}
	return nil
}
