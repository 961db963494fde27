package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/manifest"
	"github.com/gpuplane/gpuplane/internal/operator/plan"
)

// planAnnotation on a pool's Deployment records the plan it was made
// for: while it holds, the replicas are the planner's (or a person's), not
// the plan's.
const planAnnotation = "gpuplane.io/plan"

// config is the status plan as configure's configuration, for manifest.
func config(p *v1alpha1.Plan) configure.Config {
	c := configure.Config{Mode: p.Mode}
	for _, pp := range p.Pools {
		pool := &configure.Pool{Role: pp.Role, Device: pp.Device, TP: int(pp.TP), PP: int(pp.PP), EP: int(pp.EP), DP: int(pp.DP),
			Workers: int(pp.Workers), GPUsPerWorker: int(pp.TP * max(pp.PP, 1) * max(pp.DP, 1)), Batch: int(pp.Batch)}
		switch pp.Role {
		case "agg":
			c.Agg = pool
		case "prefill":
			c.Prefill = pool
		case "decode":
			c.Decode = pool
		}
	}
	return c
}

// objects are the typed objects the plan deploys.
func (r *Reconciler) objects(sd *v1alpha1.ServingDeployment, p *v1alpha1.Plan) ([]client.Object, error) {
	backend := sd.Spec.Engine.Backend
	if backend == "" {
		backend = "vllm"
	}
	o := manifest.Options{Name: sd.Name, Namespace: sd.Namespace, Driver: sd.Spec.Devices.Driver, Image: sd.Spec.Engine.Image,
		Model: sd.Spec.Model.Name, Backend: backend, Catalog: r.Env.Catalog, HFTokenSecret: sd.Spec.Engine.HFTokenSecret,
		ModelCacheClaim: sd.Spec.Serving.ModelCacheClaim, NodeSelector: sd.Spec.Serving.NodeSelector,
		FrontendImage: r.FrontendImage, Labels: map[string]string{ownerLabel: sd.Name}}
	if s := sd.Spec.Engine.Speculative; s != nil {
		o.Spec = &manifest.Speculative{Tokens: int(s.Tokens), Accept: plan.Acceptance(s), Draft: s.Draft}
	}
	// Emulated workers take the same precisions, so they price what a real
	// engine would run.
	q, kv, err := manifest.Precisions(r.Env.Catalog, sd.Spec.Model.Name, sd.Spec.Engine.Precision)
	if err != nil {
		return nil, fmt.Errorf("spec.engine.precision: %w", err)
	}
	o.Quantization, o.KVCache = q, kv
	cfg := config(p)
	objs, err := manifest.Objects(cfg, o)
	if err != nil {
		return nil, err
	}
	key := planKey(p)
	out := make([]client.Object, 0, len(objs))
	for _, obj := range objs {
		co, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("the plan needs an object the controller does not deploy (%T)", obj)
		}
		if d, ok := co.(*appsv1.Deployment); ok && d.Labels["gpuplane.io/role"] != "frontend" {
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[planAnnotation] = key
		}
		out = append(out, co)
	}
	if sd.Spec.Serving.Dynamo {
		y, err := manifest.Dynamo(cfg, o)
		if err != nil {
			return nil, fmt.Errorf("spec.serving.dynamo: %w", err)
		}
		out = append(out, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: sd.Name + "-dynamo", Namespace: sd.Namespace, Labels: o.Labels},
			Data:       map[string]string{"dynamographdeployment.yaml": string(y)}})
	}
	return out, nil
}

// apply creates or updates every object of the plan (server-side apply,
// owned by the ServingDeployment) and deletes the ones it no longer has.
func (r *Reconciler) apply(ctx context.Context, sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus) error {
	objs, err := r.objects(sd, st.Plan)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	applied := 0
	for _, obj := range objs {
		if err := controllerutil.SetControllerReference(sd, obj, r.Client.Scheme()); err != nil {
			return err
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		delete(u, "status")
		unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u, "spec", "template", "metadata", "creationTimestamp")
		us := &unstructured.Unstructured{Object: u}
		keep[us.GetKind()+"/"+us.GetName()] = true
		// The hash of what is applied (a pool's replicas aside: those are the
		// planner's) lets a reconcile skip objects already as wanted; only
		// the cache is read for that.
		replicas, hasReplicas, _ := unstructured.NestedFieldNoCopy(u, "spec", "replicas")
		unstructured.RemoveNestedField(u, "spec", "replicas")
		hash, err := specHash(u)
		if err != nil {
			return err
		}
		cur, err := r.current(ctx, obj)
		if err != nil {
			return err
		}
		if cur != nil && cur.GetAnnotations()[hashAnnotation] == hash && ownedBy(cur, sd) {
			continue
		}
		if hasReplicas {
			if d, ok := cur.(*appsv1.Deployment); ok && d.Annotations[planAnnotation] == us.GetAnnotations()[planAnnotation] && d.Spec.Replicas != nil {
				replicas = int64(*d.Spec.Replicas) // the plan stands: the planner's (or a person's) size stays
			}
			_ = unstructured.SetNestedField(u, replicas, "spec", "replicas")
		}
		ann := us.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[hashAnnotation] = hash
		us.SetAnnotations(ann)
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(us), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", us.GetKind(), us.GetName(), err)
		}
		applied++
	}
	if err := r.prune(ctx, sd, keep); err != nil {
		return err
	}
	st.Endpoint = fmt.Sprintf("http://%s-frontend.%s.svc:%d", sd.Name, sd.Namespace, manifest.FrontendPort)
	if applied > 0 || findCond(st, CondDeployed) == nil {
		setCond(st, sd.Generation, CondDeployed, true, "Applied", fmt.Sprintf("%d objects as planned (%d written in the last change)", len(objs), applied))
	}
	return nil
}

// hashAnnotation on every owned object is the hash of its applied form.
const hashAnnotation = "gpuplane.io/applied-hash"

func specHash(u map[string]any) (string, error) {
	b, err := json.Marshal(u) // map keys are sorted: the same object gives the same bytes
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// current reads obj's live version from the cache; nil when it does not exist.
func (r *Reconciler) current(ctx context.Context, obj client.Object) (client.Object, error) {
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an API object", obj)
	}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, cur)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return cur, nil
}

// prune deletes owned objects that the plan no longer has.
func (r *Reconciler) prune(ctx context.Context, sd *v1alpha1.ServingDeployment, keep map[string]bool) error {
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{"Deployment", &appsv1.DeploymentList{}}, {"Service", &corev1.ServiceList{}},
		{"ResourceClaimTemplate", &resourcev1.ResourceClaimTemplateList{}}, {"ConfigMap", &corev1.ConfigMapList{}},
		{"ServiceAccount", &corev1.ServiceAccountList{}}, {"Role", &rbacv1.RoleList{}}, {"RoleBinding", &rbacv1.RoleBindingList{}},
	}
	for _, l := range lists {
		if err := r.Client.List(ctx, l.list, client.InNamespace(sd.Namespace), client.MatchingLabels{ownerLabel: sd.Name}); err != nil {
			return fmt.Errorf("list %ss: %w", l.kind, err)
		}
		items, err := metaItems(l.list)
		if err != nil {
			return err
		}
		for _, obj := range items {
			if keep[l.kind+"/"+obj.GetName()] || !ownedBy(obj, sd) {
				continue
			}
			if err := r.Client.Delete(ctx, obj, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s %s: %w", l.kind, obj.GetName(), err)
			}
		}
	}
	return nil
}

func ownedBy(obj client.Object, sd *v1alpha1.ServingDeployment) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.UID == sd.UID {
			return true
		}
	}
	return false
}

// observeReplicas records each pool's ready and desired replicas and
// reports whether every pool and the router serve.
func (r *Reconciler) observeReplicas(ctx context.Context, sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus) (bool, error) {
	reps := &v1alpha1.Replicas{}
	ready := true
	for _, role := range append(roles(st.Plan), "frontend") {
		var d appsv1.Deployment
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: sd.Namespace, Name: sd.Name + "-" + role}, &d); err != nil {
			if apierrors.IsNotFound(err) {
				ready = false
				continue
			}
			return false, err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		text := fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, want)
		switch role {
		case "agg":
			reps.Agg = text
			reps.Summary = "agg " + text
		case "prefill":
			reps.Prefill = text
			reps.Summary = strings.TrimSpace("P " + text + " " + reps.Summary)
		case "decode":
			reps.Decode = text
			reps.Summary = strings.TrimSpace(reps.Summary + " D " + text)
		}
		if d.Status.ReadyReplicas < 1 {
			ready = false
		}
	}
	st.Replicas = reps
	return ready, nil
}

func roles(p *v1alpha1.Plan) []string {
	var out []string
	for _, pool := range p.Pools {
		out = append(out, pool.Role)
	}
	return out
}

func replicaText(r *v1alpha1.Replicas) string {
	if r == nil {
		return "no pools yet"
	}
	s := ""
	for _, p := range []struct{ n, v string }{{"agg", r.Agg}, {"prefill", r.Prefill}, {"decode", r.Decode}} {
		if p.v != "" {
			s += fmt.Sprintf("%s %s ready; ", p.n, p.v)
		}
	}
	return s
}
