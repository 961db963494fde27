package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reconcile, plan, tick prometheus.Histogram
	decisions             *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := prometheus.ExponentialBuckets(0.0005, 2, 16)
	m := &metrics{
		reconcile: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_controller_reconcile_seconds", Help: "Time of one ServingDeployment reconcile.", Buckets: buckets}),
		plan:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_controller_plan_seconds", Help: "Time to plan one ServingDeployment (devices and configure search).", Buckets: buckets}),
		tick:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpuplane_controller_planner_tick_seconds", Help: "Time of one planner tick (scrape, decide, scale).", Buckets: buckets}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuplane_controller_planner_decisions_total", Help: "Planner decisions by outcome."}, []string{"outcome"}),
	}
	for _, c := range []prometheus.Collector{m.reconcile, m.plan, m.tick, m.decisions} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register controller metrics: %w", err)
		}
	}
	return m, nil
}
