package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/manifest"
	"github.com/gpuplane/gpuplane/internal/operator/plan"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/plannerlive"
	"github.com/gpuplane/gpuplane/internal/workers"
)

// livePlanner is one object's planner: the core's state between ticks.
type livePlanner struct {
	key    string // generation and plan it was built for
	runner *plannerlive.Runner
	source *recording
	next   time.Time

	mu        sync.Mutex
	decisions []v1alpha1.Decision
}

// recording remembers the last observation for the status.
type recording struct {
	plannerlive.MetricsSource
	last planner.Observation
}

func (r *recording) Observe(ctx context.Context, now time.Time) planner.Observation {
	r.last = r.MetricsSource.Observe(ctx, now)
	return r.last
}

func (r *Reconciler) forget(n types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.planners, n)
	delete(r.tried, n)
}

// tickPlanner runs the object's planner when its interval is due and
// returns how long until the next tick (0: no planner).
func (r *Reconciler) tickPlanner(ctx context.Context, sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus) (time.Duration, error) {
	name := types.NamespacedName{Namespace: sd.Namespace, Name: sd.Name}
	mode := sd.Spec.Planner.Mode
	if mode == "" {
		mode = "auto"
	}
	gen := sd.Generation
	switch {
	case mode == "off":
		r.forget(name)
		setCondStatus(st, gen, CondSLOMet, metav1.ConditionUnknown, "PlannerOff", "spec.planner.mode is off: latency is not observed")
		return 0, nil
	case st.Plan.Mode != "disagg":
		r.forget(name)
		setCondStatus(st, gen, CondSLOMet, metav1.ConditionUnknown, "AggregatedPlan", "the planner sizes prefill and decode pools; this plan is aggregated, so its replicas stay as planned")
		return 0, nil
	}
	lp, err := r.plannerFor(sd, st.Plan, mode)
	if err != nil {
		setCondStatus(st, gen, CondSLOMet, metav1.ConditionUnknown, "PlannerError", err.Error())
		return 0, nil
	}
	now := r.Now()
	interval := time.Duration(lp.runner.Planner.Config().Interval * float64(time.Second))
	if now.Before(lp.next) {
		r.planStatus(sd, st, lp)
		return lp.next.Sub(now), nil
	}
	lp.next = now.Add(interval)
	start := time.Now()
	_, err = lp.runner.Tick(ctx, now)
	r.metrics.tick.Observe(time.Since(start).Seconds())
	r.planStatus(sd, st, lp)
	return interval, err
}

// plannerFor returns the object's planner, built anew when the spec or
// the plan changed.
func (r *Reconciler) plannerFor(sd *v1alpha1.ServingDeployment, p *v1alpha1.Plan, mode string) (*livePlanner, error) {
	name := types.NamespacedName{Namespace: sd.Namespace, Name: sd.Name}
	key := strconv.FormatInt(sd.Generation, 10) + "|" + planKey(p)
	r.mu.Lock()
	lp := r.planners[name]
	r.mu.Unlock()
	if lp != nil && lp.key == key {
		return lp, nil
	}
	var pre, dec v1alpha1.PoolPlan
	for _, pool := range p.Pools {
		switch pool.Role {
		case "prefill":
			pre = pool
		case "decode":
			dec = pool
		}
	}
	if pre.Device != dec.Device {
		return nil, fmt.Errorf("the planner's capacity model takes one device kind; prefill runs on %s and decode on %s", pre.Device, dec.Device)
	}
	pct, err := plan.Percentile(sd.Spec.SLO.Percentile)
	if err != nil {
		return nil, err
	}
	ps := sd.Spec.Planner
	var cfg plannerlive.Config
	cfg.Planner = planner.Config{
		Interval: float64(max(ps.IntervalSeconds, 2)), TTFTms: float64(sd.Spec.SLO.TTFTMilliseconds), ITLms: float64(sd.Spec.SLO.ITLMilliseconds),
		TTFTPercentile: pct, ITLPercentile: pct, StartupDelay: float64(max(ps.StartupSeconds, 1)),
		MaxPrefill: int(ps.MaxPrefill), MaxDecode: int(ps.MaxDecode), GPUBudget: int(sd.Spec.Budget.MaxGPUs),
	}
	cfg.Engine.Model, cfg.Engine.GPU, cfg.Engine.Backend = sd.Spec.Model.Name, pre.Device, plan.Backend(&sd.Spec)
	cfg.Engine.Precision = sd.Spec.Engine.Precision
	cfg.Engine.PrefillTP, cfg.Engine.DecodeTP = int(pre.TP), int(dec.TP)
	cfg.Engine.PrefillEP, cfg.Engine.DecodeEP = int(pre.EP), int(dec.EP)
	cfg.Engine.PrefillDP, cfg.Engine.DecodeDP = int(pre.DP), int(dec.DP)
	if s := sd.Spec.Engine.Speculative; s != nil {
		cfg.Engine.SpecTokens, cfg.Engine.SpecAccept = int(s.Tokens), plan.Acceptance(s)
	}
	if d := ps.ScaleDownSeconds; d != nil {
		cfg.Planner.Cooldown, cfg.Planner.Stabilization = float64(*d), float64(*d)
	}
	core, err := cfg.Build(r.Env)
	if err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	pods := func(role string) cachedPods {
		return cachedPods{c: r.Client, ns: sd.Namespace, labels: manifest.PodLabels(sd.Name, role)}
	}
	src := &plannerlive.ScrapeSource{PrefillTargets: pods("prefill"), DecodeTargets: pods("decode"), TTFTPercentile: pct, ITLPercentile: pct}
	lp = &livePlanner{key: key, source: &recording{MetricsSource: src}}
	ref := sd.DeepCopy()
	lp.runner = &plannerlive.Runner{Planner: core, Metrics: lp.source, DryRun: mode == "advisory",
		Prefill: &scaler{c: r.Client, name: types.NamespacedName{Namespace: sd.Namespace, Name: sd.Name + "-prefill"}},
		Decode:  &scaler{c: r.Client, name: types.NamespacedName{Namespace: sd.Namespace, Name: sd.Name + "-decode"}},
		Log:     log.Log.WithName("planner").WithValues("servingdeployment", name.String()),
		OnDecision: func(d planner.Decision, outcome string) {
			r.metrics.decisions.WithLabelValues(outcome).Inc()
			lp.mu.Lock()
			lp.decisions = append(lp.decisions, v1alpha1.Decision{Time: metav1.NewTime(time.Unix(int64(d.Time), 0)),
				Prefill: int32(d.Prefill), Decode: int32(d.Decode), Outcome: outcome, Reason: d.Reason})
			if len(lp.decisions) > 10 {
				lp.decisions = lp.decisions[len(lp.decisions)-10:]
			}
			lp.mu.Unlock()
			if outcome == "scaled" || outcome == "advised" || outcome == "failed" {
				kind := corev1.EventTypeNormal
				if outcome == "failed" {
					kind = corev1.EventTypeWarning
				}
				r.Recorder.Eventf(ref, nil, kind, "Planner"+strings.ToUpper(outcome[:1])+outcome[1:], "Scale", "prefill %d, decode %d: %s", d.Prefill, d.Decode, d.Reason)
			}
		}}
	r.mu.Lock()
	r.planners[name] = lp
	r.mu.Unlock()
	return lp, nil
}

// planStatus copies the planner's decisions and last observation into the
// status and judges the SLO on it.
func (r *Reconciler) planStatus(sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus, lp *livePlanner) {
	lp.mu.Lock()
	st.Decisions = append([]v1alpha1.Decision(nil), lp.decisions...)
	lp.mu.Unlock()
	o := lp.source.last
	gen := sd.Generation
	if o.Time == 0 {
		setCondStatus(st, gen, CondSLOMet, metav1.ConditionUnknown, "NotObserved", "the planner has not observed the workers yet")
		return
	}
	if o.Stale || o.Requests == 0 {
		why := "no requests in the last interval"
		if o.Stale {
			why = "the workers' metrics are missing or stale: " + o.Reason
		}
		setCondStatus(st, gen, CondSLOMet, metav1.ConditionUnknown, "NoTraffic", why)
		return
	}
	ttft, itl := o.TTFTms, o.ITLms
	stat := "mean"
	if pct, _ := plan.Percentile(sd.Spec.SLO.Percentile); pct > 0 && o.TTFTQms > 0 {
		ttft, itl, stat = o.TTFTQms, o.ITLQms, sd.Spec.SLO.Percentile
	}
	st.Observed = &v1alpha1.Observed{TTFT: msText(ttft), ITL: msText(itl), Time: metav1.NewTime(time.Unix(int64(o.Time), 0)),
		RequestsPerSecond: strconv.FormatFloat(float64(o.Requests)/max(o.Interval, 1e-9), 'f', 2, 64)}
	slo := sd.Spec.SLO
	var miss []string
	if slo.TTFTMilliseconds > 0 && ttft > float64(slo.TTFTMilliseconds) {
		miss = append(miss, fmt.Sprintf("TTFT %s %s > %d ms", stat, msText(ttft), slo.TTFTMilliseconds))
	}
	if slo.ITLMilliseconds > 0 && itl > float64(slo.ITLMilliseconds) {
		miss = append(miss, fmt.Sprintf("ITL %s %s > %d ms", stat, msText(itl), slo.ITLMilliseconds))
	}
	if len(miss) > 0 {
		setCond(st, gen, CondSLOMet, false, "SLOMissed", fmt.Sprintf("over the last interval: %v", miss))
		return
	}
	setCond(st, gen, CondSLOMet, true, "WithinSLO", fmt.Sprintf("TTFT %s %s, ITL %s %s over the last interval", stat, msText(ttft), stat, msText(itl)))
}

func msText(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "ms" }

// cachedPods finds a pool's workers (Running, Ready pods) in the
// manager's cache: a planner tick costs no API call to find them.
type cachedPods struct {
	c      client.Reader
	ns     string
	labels client.MatchingLabels
}

func (p cachedPods) Workers(ctx context.Context) ([]string, error) {
	var list corev1.PodList
	if err := p.c.List(ctx, &list, client.InNamespace(p.ns), p.labels); err != nil {
		return nil, fmt.Errorf("list pods %v in %s: %w", p.labels, p.ns, err)
	}
	return workers.URLs(list.Items, manifest.Port), nil
}

// scaler sets a pool's replicas through the Deployment's scale subresource.
type scaler struct {
	c    client.Client
	name types.NamespacedName
}

func (s *scaler) Replicas(ctx context.Context) (int, error) {
	var d appsv1.Deployment
	if err := s.c.Get(ctx, s.name, &d); err != nil {
		return 0, err
	}
	if d.Spec.Replicas == nil {
		return 1, nil
	}
	return int(*d.Spec.Replicas), nil
}

func (s *scaler) SetReplicas(ctx context.Context, n int) error {
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = s.name.Namespace, s.name.Name
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: int32(n)}}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)))
	if err := s.c.SubResource("scale").Patch(ctx, d, patch, client.WithSubResourceBody(scale)); err != nil {
		return fmt.Errorf("scale %s: %w", s.name, err)
	}
	return nil
}
