package controller

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

type events struct{ reasons []string }

func (e *events) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	e.reasons = append(e.reasons, reason)
}

func setup(t *testing.T, sd *v1alpha1.ServingDeployment) (*Reconciler, client.Client, *events) {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n  nodePools:\n  - {name: h, profile: hgx-h100, count: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := f.Nodes(catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{sd}
	for _, n := range nodes {
		for _, s := range n.Slices.ResourceSlices("gpu.gpuplane.io", n.Name) {
			objs = append(objs, s.DeepCopy())
		}
	}
	for _, c := range classes.All("gpu.gpuplane.io", classes.Options{}) {
		objs = append(objs, c.DeepCopy())
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.ServingDeployment{}).Build()
	params, err := perf.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	r := &Reconciler{Client: c, Env: estimate.Env{Catalog: catalog.MustDefault(), Params: params}, Recorder: ev,
		FrontendImage: "ghcr.io/gpuplane/gpuplane:test", Now: func() time.Time { return now }, metrics: m,
		planners: map[types.NamespacedName]*livePlanner{}, tried: map[types.NamespacedName]time.Time{}}
	return r, c, ev
}

func sdFor(ttft int32) *v1alpha1.ServingDeployment {
	rate := resource.MustParse("500m")
	return &v1alpha1.ServingDeployment{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "llm", Generation: 1, UID: "u1"},
		Spec: v1alpha1.ServingDeploymentSpec{
			Model: v1alpha1.ModelSpec{Name: "Qwen/Qwen3-32B-FP8"}, Engine: v1alpha1.EngineSpec{Backend: "emulate"},
			SLO:     v1alpha1.SLOSpec{TTFTMilliseconds: ttft, ITLMilliseconds: 30},
			Traffic: v1alpha1.TrafficSpec{InputTokens: 4000, OutputTokens: 500, RequestsPerSecond: &rate},
			Planner: v1alpha1.PlannerSpec{Mode: "off"}, Serving: v1alpha1.ServingSpec{Modes: []string{"disagg"}}}}
}

func reconcileOnce(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "llm", Name: "qwen"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A reconcile plans on the fake cluster's devices, writes the status and
// the owned objects; a second one changes nothing; a person's replicas
// stay while the plan stands.
func TestReconcilePlansAndApplies(t *testing.T) {
	r, c, ev := setup(t, sdFor(500))
	reconcileOnce(t, r)
	var sd v1alpha1.ServingDeployment
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "llm", Name: "qwen"}, &sd); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(sd.Status.Conditions, CondPlanned) || sd.Status.Plan == nil || sd.Status.Plan.Mode != "disagg" {
		t.Fatalf("status %+v", sd.Status)
	}
	if !strings.Contains(sd.Status.Devices, "8 x h100_sxm") {
		t.Errorf("devices %q", sd.Status.Devices)
	}
	var deps appsv1.DeploymentList
	if err := c.List(context.Background(), &deps, client.InNamespace("llm")); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 3 {
		t.Fatalf("%d Deployments, want prefill, decode and frontend", len(deps.Items))
	}
	var rcts resourcev1.ResourceClaimTemplateList
	if err := c.List(context.Background(), &rcts, client.InNamespace("llm")); err != nil || len(rcts.Items) != 2 {
		t.Fatalf("claim templates: %v %d", err, len(rcts.Items))
	}
	for _, d := range deps.Items {
		if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != "u1" || d.Annotations[hashAnnotation] == "" {
			t.Errorf("%s: owner %v annotations %v", d.Name, d.OwnerReferences, d.Annotations)
		}
	}
	// Someone scales prefill; the plan stands, so the next reconcile keeps it.
	var pre appsv1.Deployment
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "llm", Name: "qwen-prefill"}, &pre); err != nil {
		t.Fatal(err)
	}
	three := int32(3)
	pre.Spec.Replicas = &three
	if err := c.Update(context.Background(), &pre); err != nil {
		t.Fatal(err)
	}
	rv := pre.ResourceVersion
	reconcileOnce(t, r)
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "llm", Name: "qwen-prefill"}, &pre); err != nil {
		t.Fatal(err)
	}
	if *pre.Spec.Replicas != 3 || pre.ResourceVersion != rv {
		t.Errorf("prefill at %d replicas (version %s, was %s): want 3 and no write", *pre.Spec.Replicas, pre.ResourceVersion, rv)
	}
	if n := strings.Count(strings.Join(ev.reasons, ","), "Planned"); n != 1 {
		t.Errorf("events %v: one Planned", ev.reasons)
	}
}

// An impossible SLO deploys nothing and says why.
func TestReconcileUnreachable(t *testing.T) {
	r, c, ev := setup(t, sdFor(5))
	if res := reconcileOnce(t, r); res.RequeueAfter != 30*time.Second {
		t.Errorf("requeue %v: an unplanned object is tried again every 30 s", res.RequeueAfter)
	}
	var sd v1alpha1.ServingDeployment
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "llm", Name: "qwen"}, &sd); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(sd.Status.Conditions, CondPlanned)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "SLOUnreachable" || !strings.Contains(cond.Message, "closest") {
		t.Fatalf("Planned %+v", cond)
	}
	var deps appsv1.DeploymentList
	if err := c.List(context.Background(), &deps); err != nil || len(deps.Items) != 0 {
		t.Fatalf("%d Deployments for an unplanned object", len(deps.Items))
	}
	if len(ev.reasons) != 1 || ev.reasons[0] != "SLOUnreachable" {
		t.Errorf("events %v", ev.reasons)
	}
}

// A model the catalog lacks plans from its config.json in a ConfigMap; a
// ConfigMap without the key is an InvalidModel condition that says so.
func TestReconcileModelFromConfigMap(t *testing.T) {
	cfg, err := os.ReadFile("../../catalog/testdata/qwen3-like-config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		data   map[string]string
		status metav1.ConditionStatus
		says   string
	}{
		{map[string]string{"config.json": string(cfg)}, metav1.ConditionTrue, "predicted TTFT"},
		{map[string]string{"other": "{}"}, metav1.ConditionFalse, "has no key config.json"},
	} {
		sd := sdFor(500)
		sd.Spec.Model = v1alpha1.ModelSpec{Name: "acme/Qwen3-like-8B", ConfigMap: &corev1.LocalObjectReference{Name: "model"}}
		r, c, _ := setup(t, sd)
		if err := c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "model", Namespace: "llm"}, Data: tc.data}); err != nil {
			t.Fatal(err)
		}
		reconcileOnce(t, r)
		var got v1alpha1.ServingDeployment
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "llm", Name: "qwen"}, &got); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, CondPlanned)
		if cond == nil || cond.Status != tc.status || !strings.Contains(cond.Message, tc.says) {
			t.Errorf("config map %v: Planned %+v, want %s saying %q", tc.data, cond, tc.status, tc.says)
		}
	}
}

// An edit that makes the SLO unreachable keeps the last good plan serving
// and says Planned=False; relaxing it again plans anew.
func TestUnplannableEditKeepsServing(t *testing.T) {
	r, c, _ := setup(t, sdFor(500))
	reconcileOnce(t, r)
	var sd v1alpha1.ServingDeployment
	key := types.NamespacedName{Namespace: "llm", Name: "qwen"}
	if err := c.Get(context.Background(), key, &sd); err != nil {
		t.Fatal(err)
	}
	good := *sd.Status.Plan
	sd.Spec.SLO.TTFTMilliseconds = 5
	sd.Generation = 2
	if err := c.Update(context.Background(), &sd); err != nil {
		t.Fatal(err)
	}
	if res := reconcileOnce(t, r); res.RequeueAfter == 0 || res.RequeueAfter > retryPlan {
		t.Errorf("requeue %v: the unplanned edit is tried again", res.RequeueAfter)
	}
	if err := c.Get(context.Background(), key, &sd); err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(sd.Status.Conditions, CondPlanned) || sd.Status.Plan == nil || sd.Status.Plan.Mode != good.Mode {
		t.Fatalf("status after an unreachable edit: %+v", sd.Status)
	}
	var deps appsv1.DeploymentList
	if err := c.List(context.Background(), &deps, client.InNamespace("llm")); err != nil || len(deps.Items) != 3 {
		t.Fatalf("the last good plan's pools must keep serving: %d Deployments, %v", len(deps.Items), err)
	}
}

// The README's example object decodes strictly and plans on one HGX H100
// node as the walk-through says: disaggregated, on H100s.
func TestExampleServingDeployment(t *testing.T) {
	b, err := os.ReadFile("../../../examples/servingdeployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sd v1alpha1.ServingDeployment
	if err := yaml.UnmarshalStrict(b, &sd); err != nil {
		t.Fatalf("examples/servingdeployment.yaml: %v", err)
	}
	sd.Namespace, sd.UID, sd.Generation = "llm", "u1", 1
	sd.Name = "qwen" // the fake cluster's helpers use this name
	r, c, _ := setup(t, &sd)
	reconcileOnce(t, r)
	var got v1alpha1.ServingDeployment
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "llm", Name: "qwen"}, &got); err != nil {
		t.Fatal(err)
	}
	if p := got.Status.Plan; p == nil || p.Mode != "disagg" || p.Device != "h100_sxm" {
		t.Fatalf("the example plans %+v; the walk-through shows disagg on h100_sxm (conditions %+v)", p, got.Status.Conditions)
	}
}

// spec.engine.speculative sizes the plan for the draft and starts the
// decode workers with it; the prefill workers, which do not decode, run
// none.
func TestReconcileSpeculativeDecoding(t *testing.T) {
	sd := sdFor(500)
	sd.Spec.Engine.Speculative = &v1alpha1.SpeculativeSpec{Tokens: 2, AcceptanceLength: resource.MustParse("1.9")}
	r, c, _ := setup(t, sd)
	reconcileOnce(t, r)
	for role, want := range map[string]bool{"decode": true, "prefill": false} {
		var d appsv1.Deployment
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "llm", Name: "qwen-" + role}, &d); err != nil {
			t.Fatal(err)
		}
		args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
		if got := strings.Contains(args, "--spec-tokens 2 --spec-accept 1.9"); got != want {
			t.Errorf("%s worker args %q: drafting %v, want %v", role, args, got, want)
		}
	}
}
