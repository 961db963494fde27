//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/bench"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/cli"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/operator/controller"
	"github.com/gpuplane/gpuplane/internal/operator/crds"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/testcluster"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// installCRDs installs the embedded CRDs (the chart's) and returns a client for them.
func installCRDs(ctx context.Context, t *testing.T) client.Client {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := crds.Install(ctx, dyn, time.Minute); err != nil {
		t.Fatal(err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func servingDeployment(ns, name string) *v1alpha1.ServingDeployment {
	return &v1alpha1.ServingDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServingDeploymentSpec{
			Model:   v1alpha1.ModelSpec{Name: "Qwen/Qwen3-32B-FP8"},
			Engine:  v1alpha1.EngineSpec{Backend: "emulate"},
			SLO:     v1alpha1.SLOSpec{TTFTMilliseconds: 500, ITLMilliseconds: 30},
			Traffic: v1alpha1.TrafficSpec{InputTokens: 4000, OutputTokens: 500, RequestsPerSecond: ptrQuantity("0.5")},
			Devices: v1alpha1.DeviceSpec{Selector: `device.attributes["gpu.gpuplane.io"].productName == "NVIDIA H100 80GB HBM3"`},
			Planner: v1alpha1.PlannerSpec{Mode: "auto", IntervalSeconds: 5, StartupSeconds: 5, ScaleDownSeconds: ptr.To[int32](15), MaxPrefill: 4, MaxDecode: 3},
			Serving: v1alpha1.ServingSpec{Modes: []string{"disagg"}, NodeSelector: map[string]string{"e2e-case": "operator"}},
		},
	}
}

func ptrQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// waitCond waits until the object's condition has the status, and returns the object.
func waitCond(ctx context.Context, t *testing.T, c client.Client, ns, name, cond string, want metav1.ConditionStatus) *v1alpha1.ServingDeployment {
	t.Helper()
	var sd v1alpha1.ServingDeployment
	for {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sd); err == nil {
			if x := meta.FindStatusCondition(sd.Status.Conditions, cond); x != nil && x.Status == want && sd.Status.ObservedGeneration == sd.Generation {
				return &sd
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s/%s: condition %s never became %s; status %+v", ns, name, cond, want, sd.Status)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestOperator: the CRD and the controller on the real control plane. A
// ServingDeployment for Qwen3-32B-FP8 (TTFT 500 ms, ITL 30 ms) is planned
// on the DRA devices the fleet publishes, its pools and router come up
// (emulated engines stand in for vLLM), a burst through the router makes
// the planner add prefill and take it back, an SLO edit re-plans, bad specs
// end in API errors or conditions, and deletion removes everything.
func TestOperator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cs := cluster.Client
	const ns = "operator"
	fleetCase(ctx, t, ns, "hgx-h100", 1)
	c := installCRDs(ctx, t)
	ctrl.SetLogger(testLogger(t))

	params, err := perf.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopController := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(cctx, cluster.Config, estimate.Env{Catalog: catalog.MustDefault(), Params: params},
			controller.Options{MetricsAddr: "0", HealthAddr: "0", FrontendImage: "ghcr.io/gpuplane/gpuplane:e2e"})
	}()
	defer func() {
		stopController()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	runPods(ctx, t, ns, buildGPUPlane(t), testcluster.GPUPlanePods(cluster.Kubeconfig))

	t.Run("bad specs", func(t *testing.T) { badSpecs(ctx, t, c, ns) })
	t.Run("configure from the cluster's devices", func(t *testing.T) {
		var out, stderr bytes.Buffer
		root := cli.NewRoot(&out, &stderr)
		root.SetArgs([]string{"configure", "--pool-from-cluster", "--kubeconfig", cluster.Kubeconfig, "--model", "Qwen/Qwen3-32B-FP8",
			"--device-selector", `device.attributes["gpu.gpuplane.io"].productName == "NVIDIA H100 80GB HBM3"`, "--isl", "4000", "--osl", "500", "-o", "json"})
		if err := root.Execute(); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "pool from the cluster:") || !strings.Contains(out.String(), `"device": "h100_sxm"`) {
			t.Errorf("stderr %q; result %.300s", stderr.String(), out.String())
		}
	})

	sd := servingDeployment(ns, "qwen")
	applied := time.Now()
	if err := c.Create(ctx, sd); err != nil {
		t.Fatal(err)
	}
	got := waitCond(ctx, t, c, ns, "qwen", controller.CondReady, metav1.ConditionTrue)
	t.Logf("apply to Ready: %s; plan %+v; devices %s", time.Since(applied).Round(10*time.Millisecond), *got.Status.Plan, got.Status.Devices)
	if p := got.Status.Plan; p.Mode != "disagg" || len(p.Pools) != 2 || p.Device != "h100_sxm" {
		t.Fatalf("plan %+v: want disaggregated pools on h100_sxm", p)
	}
	// The pools' pods hold DRA claims the scheduler allocated on the fleet's H100s.
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "gpuplane.io/role in (prefill,decode)"})
	if err != nil || len(pods.Items) < 2 {
		t.Fatalf("worker pods: %v %d", err, len(pods.Items))
	}
	for _, p := range pods.Items {
		if len(p.Status.ResourceClaimStatuses) != 1 || p.Spec.NodeName == "" {
			t.Fatalf("pod %s: claims %v on node %q", p.Name, p.Status.ResourceClaimStatuses, p.Spec.NodeName)
		}
		claim, err := cs.ResourceV1().ResourceClaims(ns).Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		if err != nil || claim.Status.Allocation == nil {
			t.Fatalf("pod %s: claim not allocated: %v", p.Name, err)
		}
	}

	burst(ctx, t, c, ns)

	// An SLO edit re-plans: a tighter ITL needs a wider decode worker or more of them.
	var cur v1alpha1.ServingDeployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen"}, &cur); err != nil {
		t.Fatal(err)
	}
	before := *cur.Status.Plan
	cur.Spec.SLO.ITLMilliseconds = 12
	if err := c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	got = waitCond(ctx, t, c, ns, "qwen", controller.CondPlanned, metav1.ConditionTrue)
	if got.Status.Plan.ITL == before.ITL || got.Status.Plan.Pools[1].TP == before.Pools[1].TP && got.Status.Plan.Pools[1].Workers == before.Pools[1].Workers {
		t.Errorf("ITL 12 ms re-planned to %+v, the same as %+v", *got.Status.Plan, before)
	}
	t.Logf("re-planned for ITL 12 ms: %+v", *got.Status.Plan)

	// Deletion takes every owned object through owner references.
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	for {
		deps, _ := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "gpuplane.io/serving-deployment=qwen"})
		svcs, _ := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: "gpuplane.io/serving-deployment=qwen"})
		rcts, _ := cs.ResourceV1().ResourceClaimTemplates(ns).List(ctx, metav1.ListOptions{LabelSelector: "gpuplane.io/serving-deployment=qwen"})
		if deps != nil && svcs != nil && rcts != nil && len(deps.Items)+len(svcs.Items)+len(rcts.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("owned objects outlived their ServingDeployment")
		case <-time.After(500 * time.Millisecond):
		}
	}
	logControllerMetrics(t)
}

// burst sends the reference burst through the router and checks that the
// planner scales prefill up in it and back after, with Events and status.
func burst(ctx context.Context, t *testing.T, c client.Client, ns string) {
	cs := cluster.Client
	fe, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "gpuplane.io/role=frontend"})
	if err != nil || len(fe.Items) != 1 {
		t.Fatalf("frontend pod: %v", err)
	}
	url := fmt.Sprintf("http://%s:8080", fe.Items[0].Status.PodIP)
	const burstStart, burstEnd, end = 20.0, 60.0, 110.0
	src, err := workload.NewPoisson(workload.Step{Base: 0.5, Peak: 6, Start: burstStart, End: burstEnd},
		workload.Fixed{N: 4000}, workload.Fixed{N: 100}, end, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	var peakV atomic.Int32
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for sctx.Err() == nil {
			if d, err := cs.AppsV1().Deployments(ns).Get(sctx, "qwen-prefill", metav1.GetOptions{}); err == nil && *d.Spec.Replicas > peakV.Load() {
				peakV.Store(*d.Spec.Replicas)
			}
			time.Sleep(time.Second)
		}
	}()
	sum, _, err := bench.Run(ctx, bench.Options{URL: url, Model: "Qwen/Qwen3-32B-FP8", Source: src,
		Duration: time.Duration(end * float64(time.Second)), SLOTTFT: 500 * time.Millisecond, SLOITL: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	peak := peakV.Load()
	t.Logf("burst through the router: %d requests, %d failed, attainment %.1f%%, TTFT p50 %.0f ms p99 %.0f ms; prefill peaked at %d",
		sum.Requests, sum.Failed, 100*sum.Attainment, sum.TTFT.P50, sum.TTFT.P99, peak)
	if sum.Failed != 0 {
		t.Errorf("%d of %d requests lost: %v", sum.Failed, sum.Requests, sum.Errors)
	}
	if peak < 2 {
		t.Errorf("prefill peaked at %d replicas; want the planner to add prefill in the burst", peak)
	}
	var sd v1alpha1.ServingDeployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen"}, &sd); err != nil {
		t.Fatal(err)
	}
	if d, err := cs.AppsV1().Deployments(ns).Get(ctx, "qwen-prefill", metav1.GetOptions{}); err != nil || *d.Spec.Replicas >= peak {
		t.Errorf("prefill at %d replicas %.0f s after the burst; want it back below the peak %d (%v)", *d.Spec.Replicas, end-burstEnd, peak, err)
	}
	if len(sd.Status.Decisions) == 0 || sd.Status.Observed == nil {
		t.Errorf("status has no planner decisions or observed latency: %+v", sd.Status)
	}
	t.Logf("status: replicas %+v, observed %+v, SLOMet %+v", *sd.Status.Replicas, sd.Status.Observed, meta.FindStatusCondition(sd.Status.Conditions, controller.CondSLOMet))
	evs, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range evs.Items {
		if e.Regarding.Name == "qwen" {
			reasons[e.Reason]++ // a repeated event is one with a series
			if e.Series != nil {
				reasons[e.Reason] += int(e.Series.Count)
			}
		}
	}
	if reasons["Planned"] == 0 || reasons["PlannerScaled"] < 2 {
		t.Errorf("events %v: want Planned and PlannerScaled up and down", reasons)
	}
}

// badSpecs: the API server refuses specs the schema rules out, naming the
// field; the controller answers the rest with a condition that says why.
func badSpecs(ctx context.Context, t *testing.T, c client.Client, ns string) {
	refused := []struct {
		name  string
		edit  func(*v1alpha1.ServingDeployment)
		field string
	}{
		{"negative budget", func(s *v1alpha1.ServingDeployment) { s.Spec.Budget.MaxGPUs = -1 }, "spec.budget.maxGPUs"},
		{"no SLO", func(s *v1alpha1.ServingDeployment) { s.Spec.SLO = v1alpha1.SLOSpec{} }, "ttftMilliseconds or itlMilliseconds"},
		{"bad percentile", func(s *v1alpha1.ServingDeployment) { s.Spec.SLO.Percentile = "p101" }, "spec.slo.percentile"},
		{"unpinned image", func(s *v1alpha1.ServingDeployment) { s.Spec.Engine.Image = "vllm/vllm-openai" }, "pin a tag or digest"},
		{"unknown backend", func(s *v1alpha1.ServingDeployment) { s.Spec.Engine.Backend = "tgi" }, "spec.engine.backend"},
		{"rate and users", func(s *v1alpha1.ServingDeployment) { s.Spec.Traffic.Users = 10 }, "not both"},
		{"long name", func(s *v1alpha1.ServingDeployment) { s.Name = strings.Repeat("a", 41) }, "metadata.name"},
	}
	for i, tc := range refused {
		sd := servingDeployment(ns, fmt.Sprintf("refused-%d", i))
		tc.edit(sd)
		err := c.Create(ctx, sd)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: API error %v, want one naming %q", tc.name, err, tc.field)
		}
	}
	conditions := []struct {
		name, reason, says string
		edit               func(*v1alpha1.ServingDeployment)
	}{
		{"unknown model", "InvalidModel", "spec.model.name", func(s *v1alpha1.ServingDeployment) { s.Spec.Model.Name = "acme/NoSuchModel-7B" }},
		{"impossible SLO", "SLOUnreachable", "closest", func(s *v1alpha1.ServingDeployment) { s.Spec.SLO.TTFTMilliseconds = 5 }},
		{"no matching devices", "NoMatchingDevices", "no free device", func(s *v1alpha1.ServingDeployment) {
			s.Spec.Devices.Selector = `device.attributes["gpu.gpuplane.io"].productName == "NVIDIA B300"`
		}},
		{"bad selector", "InvalidDevices", "devices.selector", func(s *v1alpha1.ServingDeployment) { s.Spec.Devices.Selector = "device.attributes[" }},
		{"int8 without a checkpoint", "InvalidSpec", "quantised checkpoint", func(s *v1alpha1.ServingDeployment) {
			s.Spec.Model.Name, s.Spec.Engine.Backend, s.Spec.Engine.Precision = "Qwen/Qwen3-32B", "vllm", "int8"
		}},
	}
	for i, tc := range conditions {
		name := fmt.Sprintf("unplanned-%d", i)
		sd := servingDeployment(ns, name)
		tc.edit(sd)
		if err := c.Create(ctx, sd); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := waitCond(ctx, t, c, ns, name, controller.CondPlanned, metav1.ConditionFalse)
		cond := meta.FindStatusCondition(got.Status.Conditions, controller.CondPlanned)
		if cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.says) {
			t.Errorf("%s: Planned=False %s %q; want reason %s saying %q", tc.name, cond.Reason, cond.Message, tc.reason, tc.says)
		}
		t.Logf("%s: %s: %s", tc.name, cond.Reason, cond.Message)
		if err := c.Delete(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
}

// logControllerMetrics reports the controller's own latency histograms.
func logControllerMetrics(t *testing.T) {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "gpuplane_controller_") || mf.GetMetric()[0].GetHistogram() == nil {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if n := h.GetSampleCount(); n > 0 {
			t.Logf("%s: %d samples, mean %.1f ms", mf.GetName(), n, 1000*h.GetSampleSum()/float64(n))
		}
	}
}
