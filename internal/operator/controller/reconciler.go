// Package controller is gpuplane's ServingDeployment controller: it plans
// each object on the cluster's free DRA devices with configure, owns the
// objects that serve it (claim templates, worker pools, the router), and
// runs the SLO planner core against the workers' metrics, scaling the pools
// through the scale subresource.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/estimate"
)

// Recorder emits Events (the events.k8s.io recorder the manager gives).
type Recorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Reconciler reconciles ServingDeployments.
type Reconciler struct {
	Client   client.Client
	Env      estimate.Env
	Recorder Recorder
	// FrontendImage is gpuplane's image for the router and emulated engines.
	FrontendImage string
	// Now is the clock (tests fix it).
	Now func() time.Time

	metrics  *metrics
	mu       sync.Mutex
	planners map[types.NamespacedName]*livePlanner
	tried    map[types.NamespacedName]time.Time // last re-plan of an unplanned object
}

// Condition types and the finalizer-free ownership label.
const (
	CondPlanned  = "Planned"
	CondDeployed = "Deployed"
	CondReady    = "Ready"
	CondSLOMet   = "SLOMet"

	fieldOwner = "gpuplane-controller"
	// ownerLabel marks every object a ServingDeployment owns.
	ownerLabel = "gpuplane.io/serving-deployment"
)

// SetupWithManager registers the controller and its metrics on reg.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, reg prometheus.Registerer) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	r.planners = map[types.NamespacedName]*livePlanner{}
	r.tried = map[types.NamespacedName]time.Time{}
	m, err := newMetrics(reg)
	if err != nil {
		return err
	}
	r.metrics = m
	// New or freed devices may let an unplanned object plan.
	devicesChanged := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.ServingDeploymentList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, sd := range list.Items {
			if !meta.IsStatusConditionTrue(sd.Status.Conditions, CondPlanned) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: sd.Namespace, Name: sd.Name}})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ServingDeployment{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&resourcev1.ResourceClaimTemplate{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Watches(&resourcev1.ResourceSlice{}, devicesChanged).
		Named("servingdeployment").
		// Plans are CPU-bound searches: a few at once keep one object's
		// re-plan from holding up the others' planner ticks.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile plans, applies, observes and (in auto mode) scales one object.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now() // a duration: the wall clock, whatever Now says
	defer func() { r.metrics.reconcile.Observe(time.Since(start).Seconds()) }()
	logger := log.FromContext(ctx)
	var sd v1alpha1.ServingDeployment
	if err := r.Client.Get(ctx, req.NamespacedName, &sd); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName) // owner references take the objects
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if sd.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	st := sd.Status.DeepCopy()
	requeue := time.Duration(0)
	if r.needsPlan(&sd, st) {
		p, err := r.plan(ctx, &sd, st)
		if err != nil {
			return ctrl.Result{}, err
		}
		st.ObservedGeneration = sd.Generation
		if !p && st.Plan == nil {
			// Devices may free up: try again now and then, and on every
			// ResourceSlice change.
			return r.finish(ctx, &sd, st, retryPlan)
		}
		if !p {
			// An edit that cannot be planned leaves the last good plan
			// serving (Planned=False says why) rather than tear it down.
			requeue = retryPlan
		}
	}
	st.ObservedGeneration = sd.Generation
	if err := r.apply(ctx, &sd, st); err != nil {
		setCond(st, sd.Generation, CondDeployed, false, "ApplyFailed", err.Error())
		if werr := r.writeStatus(ctx, &sd, st); werr != nil {
			log.FromContext(ctx).Error(werr, "status after a failed apply")
		}
		return ctrl.Result{}, err
	}
	ready, err := r.observeReplicas(ctx, &sd, st)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ready {
		setCond(st, sd.Generation, CondReady, true, "PoolsReady", "every pool and the router have ready pods; endpoint "+st.Endpoint)
	} else {
		setCond(st, sd.Generation, CondReady, false, "PodsStarting", "waiting for ready pods: "+replicaText(st.Replicas))
		requeue = 5 * time.Second
	}
	if next, err := r.tickPlanner(ctx, &sd, st); err != nil {
		logger.Error(err, "planner tick")
	} else if next > 0 && (requeue == 0 || next < requeue) {
		requeue = next
	}
	return r.finish(ctx, &sd, st, requeue)
}

// retryPlan is how often an object that cannot be planned is tried again.
const retryPlan = 30 * time.Second

// needsPlan: a new object or spec, or an unplanned one whose last try is
// old enough (a ResourceSlice change also brings it here).
func (r *Reconciler) needsPlan(sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus) bool {
	if st.Plan == nil || st.ObservedGeneration != sd.Generation {
		return true
	}
	if meta.IsStatusConditionTrue(st.Conditions, CondPlanned) {
		return false
	}
	key := types.NamespacedName{Namespace: sd.Namespace, Name: sd.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.tried[key]; ok && r.Now().Sub(last) < 5*time.Second {
		return false
	}
	r.tried[key] = r.Now()
	return true
}

// finish writes the status and schedules the next look. A conflict means
// the cache was behind: look again at once rather than lose the status.
func (r *Reconciler) finish(ctx context.Context, sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus, next time.Duration) (ctrl.Result, error) {
	if err := r.writeStatus(ctx, sd, st); err != nil {
		if apierrors.IsConflict(err) {
			log.FromContext(ctx).V(1).Info("status conflict; looking again")
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

func (r *Reconciler) writeStatus(ctx context.Context, sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus) error {
	if equality.Semantic.DeepEqual(sd.Status, *st) {
		return nil // nothing new: no write, no event
	}
	sd.Status = *st
	if err := r.Client.Status().Update(ctx, sd); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}

func setCond(st *v1alpha1.ServingDeploymentStatus, gen int64, t string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	setCondStatus(st, gen, t, s, reason, msg)
}

func setCondStatus(st *v1alpha1.ServingDeploymentStatus, gen int64, t string, s metav1.ConditionStatus, reason, msg string) {
	if len(msg) > 1024 {
		msg = msg[:1021] + "..."
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}
