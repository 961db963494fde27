//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
)

// Run with: go test -tags e2e -run '^$' -bench . -benchtime 1x ./test/e2e
// (each iteration builds its own 64-node fleet on the shared control plane).

var benchRun int

// benchFleet creates 64 kwok nodes of 8 H100s (outside the timer) and
// returns them with their slices laid out.
func benchFleet(b *testing.B, features string) ([]fleet.Node, *fleet.Publisher) {
	b.Helper()
	benchRun++
	ctx := context.Background()
	ensureClasses(ctx, b)
	f, err := fleet.Parse([]byte(fmt.Sprintf(`apiVersion: gpuplane.io/v1alpha1
kind: Fleet
spec:
  features: %s
  nodePools:
  - {name: bench%d, profile: hgx-h100, count: 64, labels: {e2e-case: bench%d}}
`, features, benchRun, benchRun)))
	if err != nil {
		b.Fatal(err)
	}
	nodes, err := f.Nodes(catalog.MustDefault())
	if err != nil {
		b.Fatal(err)
	}
	return nodes, &fleet.Publisher{Client: cluster.Client, Driver: driver}
}

// BenchmarkFleetPublish64x8 times publishing the slices of 64 nodes x 8
// H100s until the API server holds them all, whole GPUs and dynamic MIG.
func BenchmarkFleetPublish64x8(b *testing.B) {
	for _, tc := range []struct{ name, features string }{{"whole", "{}"}, {"dynamic-mig", "{dynamicMIG: true}"}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				nodes, pub := benchFleet(b, tc.features)
				createNodes(b, nodes)
				want := 0
				devices := 0
				for _, n := range nodes {
					want += len(n.Slices.Slices)
					devices += len(n.Slices.Devices)
				}
				b.StartTimer()
				t0 := time.Now()
				r, err := pub.Start(context.Background(), nodes)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.WaitPublished(context.Background()); err != nil {
					b.Fatal(err)
				}
				d := time.Since(t0)
				b.StopTimer()
				r.Stop()
				b.ReportMetric(float64(want), "slices")
				b.ReportMetric(float64(devices), "devices")
				b.ReportMetric(float64(devices)/d.Seconds(), "devices/s")
				b.StartTimer()
			}
		})
	}
}

// BenchmarkSchedulePods512 times the real scheduler placing 512 pods, each
// with a claim (from a template) for one GPU, on 64 nodes x 8 H100s.
func BenchmarkSchedulePods512(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		nodes, pub := benchFleet(b, "{}")
		createNodes(b, nodes)
		r, err := pub.Start(context.Background(), nodes)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.WaitPublished(context.Background()); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		ns := fmt.Sprintf("bench-%d", benchRun)
		cs := cluster.Client
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, &resourcev1.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "one-gpu"},
			Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: exactly("gpu.gpuplane.io", attr("productName")+` == "NVIDIA H100 80GB HBM3"`, 1, nil)},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		labels := map[string]string{"app": "bench"}
		const pods = 512
		b.StartTimer()
		t0 := time.Now()
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](pods), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					NodeSelector:   map[string]string{"e2e-case": fmt.Sprintf("bench%d", benchRun)},
					ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}},
					Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai",
						Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}}}},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var created time.Duration
		for {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			scheduled := 0
			for _, p := range list.Items {
				if p.Spec.NodeName != "" {
					scheduled++
				}
			}
			if created == 0 && len(list.Items) == pods {
				created = time.Since(t0)
			}
			if scheduled == pods {
				break
			}
			if time.Since(t0) > 5*time.Minute {
				b.Fatalf("%d of %d pods scheduled after 5 minutes", scheduled, pods)
			}
			time.Sleep(50 * time.Millisecond)
		}
		d := time.Since(t0)
		b.StopTimer()
		b.ReportMetric(pods/d.Seconds(), "pods/s")
		// When the last pod existed: the controllers' share of the time.
		b.ReportMetric(created.Seconds(), "s-to-create")
		r.Stop()
		b.StartTimer()
	}
}

func createNodes(b *testing.B, nodes []fleet.Node) {
	b.Helper()
	// Publishing with CreateNodes and no slices would need a controller per
	// node; create the Node objects directly instead.
	pub := &fleet.Publisher{Client: cluster.Client, Driver: driver, CreateNodes: true}
	for _, n := range nodes {
		if err := pub.CreateNode(context.Background(), n); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range nodes {
		waitNodeReady(context.Background(), b, n.Name)
	}
}
