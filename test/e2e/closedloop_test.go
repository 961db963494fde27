//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuplane/gpuplane/internal/bench"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/frontend"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/plannerlive"
	"github.com/gpuplane/gpuplane/internal/testcluster"
	"github.com/gpuplane/gpuplane/internal/workers"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// emulator runs an emulated engine of the pod's role on port 8000.
func emulator(extra ...string) func(pod *corev1.Pod) ([]string, int) {
	return func(pod *corev1.Pod) ([]string, int) {
		return append([]string{"emulate", "--host", pod.Status.PodIP, "--port", "8000", "--role", pod.Labels["role"]}, extra...), 8000
	}
}

// runPods starts a pod runner for ns until the test ends.
func runPods(ctx context.Context, t *testing.T, ns, bin string, command func(*corev1.Pod) ([]string, int)) {
	r := &testcluster.PodRunner{Client: cluster.Client, Namespace: ns, Bin: bin, Command: command, OnError: func(err error) { t.Errorf("pod runner: %v", err) }}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }()
	t.Cleanup(func() { stop(); <-done; r.Stop() })
}

// buildGPUPlane builds the gpuplane binary from this checkout.
func buildGPUPlane(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "gpuplane")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/gpuplane")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gpuplane: %v\n%s", err, out)
	}
	return bin
}

// TestClosedLoop: the planner scales Deployments of emulated prefill and
// decode workers (pods with ResourceClaims for H100s that the DRA driver's
// fleet mode publishes); the real scheduler places them, kwok runs them,
// the pod runner serves them; the frontend finds them by label; bench
// drives a burst of long prompts; the planner reads the workers' vLLM
// metrics, scales prefill up while the burst lasts and back down after.
// No request may be lost.
func TestClosedLoop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs := cluster.Client
	const ns = "loop"
	fleetCase(ctx, t, ns, "hgx-h100", 1)
	if _, err := cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "h100"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: exactly("gpu.gpuplane.io", attr("productName")+` == "NVIDIA H100 80GB HBM3"`, 1, nil)}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"prefill", "decode"} {
		labels := map[string]string{"app": "qwen3-32b", "role": role}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "qwen3-32b-" + role},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					NodeSelector:   map[string]string{"e2e-case": "loop"},
					ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("h100")}},
					Containers: []corev1.Container{{Name: "worker", Image: "gpuplane/emulate",
						Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	params, err := perf.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: params}
	q := estimate.Defaults()
	q.Model, q.GPU, q.Precision, q.Backend, q.TP = "Qwen/Qwen3-32B", "h100_sxm", "fp8", "vllm", 1
	// The emulator is the gpuplane binary, built from this checkout.
	runPods(ctx, t, ns, buildGPUPlane(t), emulator("--model", q.Model, "--gpu", q.GPU, "--precision", q.Precision, "--backend", q.Backend, "--served-model-name", "qwen3-32b"))
	rctx, stopRunner := context.WithCancel(ctx)
	defer stopRunner()

	// The frontend finds the workers by label.
	pods := func(role string) workers.Pods {
		return workers.Pods{Client: cs, Namespace: ns, Selector: "app=qwen3-32b,role=" + role, Port: 8000}
	}
	fe := &frontend.Frontend{Prefill: pods("prefill"), Decode: pods("decode"), Refresh: 500 * time.Millisecond}
	freg := prometheus.NewRegistry()
	if err := fe.Register(freg); err != nil {
		t.Fatal(err)
	}
	go fe.Run(rctx)
	fln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(fln, fe.Handler(freg))
	for len(fe.Workers()["prefill"]) == 0 || len(fe.Workers()["decode"]) == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("workers never came up: %v", fe.Workers())
		case <-time.After(200 * time.Millisecond):
		}
	}

	// The planner: 5 s ticks, short delays to fit a test.
	cfg, err := plannerlive.ParseConfig([]byte(fmt.Sprintf(`planner: {intervalSeconds: 5, ttftMs: 500, itlMs: 30, startupDelaySeconds: 5, predictor: holt,
  cooldownSeconds: 5, stabilizationSeconds: 15, maxPrefill: 4, maxDecode: 3}
engine: {model: Qwen/Qwen3-32B, gpu: h100_sxm, precision: fp8, backend: vllm}
metrics: {scrape: {namespace: %[1]s, prefillSelector: "app=qwen3-32b,role=prefill", decodeSelector: "app=qwen3-32b,role=decode", port: 8000}}
targets:
  prefill: {group: apps, version: v1, resource: deployments, namespace: %[1]s, name: qwen3-32b-prefill}
  decode: {group: apps, version: v1, resource: deployments, namespace: %[1]s, name: qwen3-32b-decode}
`, ns)))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := cfg.Build(env)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The planner finds the workers by label too, as its config says.
	metricsSrc, err := cfg.Source(pl.Config().Interval, func() (kubernetes.Interface, error) { return cs, nil })
	if err != nil {
		t.Fatal(err)
	}
	// Every tick's observation and decision, printed last when the test
	// fails so that a log cut to its tail still says why the planner acted.
	ticks := &tickLog{src: metricsSrc}
	pr := &plannerlive.Runner{Planner: pl, Log: testLogger(t), Metrics: ticks, OnDecision: ticks.decided,
		Prefill: &plannerlive.ScaleClient{Client: dyn, Target: cfg.Targets.Prefill},
		Decode:  &plannerlive.ScaleClient{Client: dyn, Target: cfg.Targets.Decode}}
	if err := pr.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	go pr.Run(rctx)

	// Replicas over time, once a second.
	type sample struct {
		at               float64
		prefill, decode  int32
		prefillEndpoints int
	}
	var mu sync.Mutex
	var samples []sample
	t0 := time.Now()
	go func() {
		for rctx.Err() == nil {
			p, err1 := cs.AppsV1().Deployments(ns).Get(rctx, "qwen3-32b-prefill", metav1.GetOptions{})
			d, err2 := cs.AppsV1().Deployments(ns).Get(rctx, "qwen3-32b-decode", metav1.GetOptions{})
			if err1 == nil && err2 == nil {
				mu.Lock()
				samples = append(samples, sample{time.Since(t0).Seconds(), *p.Spec.Replicas, *d.Spec.Replicas, len(fe.Workers()["prefill"])})
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()

	// Load: 0.5 req/s, a burst of 6 req/s of 4000-token prompts from 20 s to 60 s, then 0.5 req/s to 110 s.
	const burstStart, burstEnd, end = 20.0, 60.0, 110.0
	src, err := workload.NewPoisson(workload.Step{Base: 0.5, Peak: 6, Start: burstStart, End: burstEnd},
		workload.Fixed{N: 4000}, workload.Fixed{N: 100}, end, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	sum, recs, err := bench.Run(ctx, bench.Options{URL: "http://" + fln.Addr().String(), Model: "qwen3-32b", Source: src,
		Duration: time.Duration(end * float64(time.Second)), SLOTTFT: 500 * time.Millisecond, SLOITL: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var peak int32
	peakAt := 0.0
	for _, s := range samples {
		if s.prefill > peak {
			peak, peakAt = s.prefill, s.at
		}
	}
	last := samples[len(samples)-1]
	t.Logf("%d requests, %d failed, attainment %.1f%%, TTFT p50 %.0f ms p99 %.0f ms; prefill peaked at %d replicas at %.0f s, ended at %d (decode %d)",
		sum.Requests, sum.Failed, 100*sum.Attainment, sum.TTFT.P50, sum.TTFT.P99, peak, peakAt, last.prefill, last.decode)
	for i, s := range samples {
		if i%5 == 0 {
			t.Logf("  t=%3.0fs prefill %d (serving %d) decode %d", s.at, s.prefill, s.prefillEndpoints, s.decode)
		}
	}
	if sum.Failed != 0 {
		t.Errorf("%d of %d requests lost: %v", sum.Failed, sum.Requests, sum.Errors)
	}
	if peak < 2 || peakAt < burstStart || peakAt > burstEnd+15 {
		t.Errorf("prefill peaked at %d replicas at %.0f s; want >= 2 during the burst (%.0f-%.0f s); the planner's prefill changes: %s", peak, peakAt, burstStart, burstEnd, ticks.changes(t0))
	}
	if last.prefill >= peak {
		t.Errorf("prefill still at %d replicas %.0f s after the burst; want it scaled back down; the last tick: %s", last.prefill, end-burstEnd, ticks.last(t0))
	}
	// Attainment recovers: the last quarter of the burst meets the SLO mostly.
	met, n := 0, 0
	for _, r := range recs {
		if r.Start >= burstEnd-10 && r.Start < burstEnd {
			n++
			if r.Error == "" && r.TTFT <= 0.5 && r.TPOT() <= 0.03 {
				met++
			}
		}
	}
	if n == 0 || float64(met)/float64(n) < 0.8 {
		t.Errorf("late in the burst %d of %d requests met the SLO; want >= 80%% once scaled", met, n)
	}
}

// tickLog records what the planner saw and decided at each tick.
type tickLog struct {
	src plannerlive.MetricsSource
	mu  sync.Mutex
	// pending is the observation of the tick now deciding.
	pending   planner.Observation
	pendingAt time.Time
	obs       []planner.Observation
	dec       []planner.Decision
	at        []time.Time
}

func (l *tickLog) Observe(ctx context.Context, now time.Time) planner.Observation {
	o := l.src.Observe(ctx, now)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending, l.pendingAt = o, now
	return o
}

func (l *tickLog) decided(d planner.Decision, _ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.obs, l.at, l.dec = append(l.obs, l.pending), append(l.at, l.pendingAt), append(l.dec, d)
}

// line says what the planner saw and decided at tick i.
func (l *tickLog) line(i int, t0 time.Time) string {
	o, d := l.obs[i], l.dec[i]
	return fmt.Sprintf("[t=%.0fs %d req/%.0fs ISL %.0f TTFT %.0fms queue %d stale %v; predicted %.2f/s capacity %.2f correction %.2f -> %d+%d: %s]",
		l.at[i].Sub(t0).Seconds(), o.Requests, o.Interval, o.MeanISL, o.TTFTms, o.QueueDepth, o.Stale,
		d.PredictedRate, d.PrefillCapacity, d.PrefillCorrection, d.Prefill, d.Decode, d.Reason)
}

// changes lists the ticks that changed the prefill pool.
func (l *tickLog) changes(t0 time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	prev := 1
	for i := range l.dec {
		if l.dec[i].Prefill != prev {
			out = append(out, l.line(i, t0))
		}
		prev = l.dec[i].Prefill
	}
	return strings.Join(out, " ")
}

// last is the last tick.
func (l *tickLog) last(t0 time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.dec); n > 0 {
		return l.line(n-1, t0)
	}
	return "none"
}

// testLogger sends the planner's log lines to the test log.
func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{})
}
