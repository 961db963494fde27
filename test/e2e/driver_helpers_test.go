//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
)

// startFleet publishes a fleet file through the driver's fleet mode and
// waits until its nodes are Ready and its slices are in the API server.
func startFleet(ctx context.Context, t *testing.T, spec string) []fleet.Node {
	t.Helper()
	ensureClasses(ctx, t)
	f, err := fleet.Parse([]byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n" + spec))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := f.Nodes(catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	pub := &fleet.Publisher{Client: cluster.Client, Driver: driver, CreateNodes: true,
		ErrorHandler: func(_ context.Context, err error, msg string) { errs = append(errs, msg+": "+err.Error()) }}
	r, err := pub.Start(context.Background(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	for _, n := range nodes {
		waitNodeReady(ctx, t, n.Name)
	}
	if err := r.WaitPublished(ctx); err != nil {
		t.Fatalf("%v; errors: %v", err, errs)
	}
	if len(errs) > 0 {
		t.Fatalf("publishing: %v", errs)
	}
	return nodes
}

func waitNodeReady(ctx context.Context, t testing.TB, name string) {
	t.Helper()
	if _, err := cluster.WaitNodeReady(ctx, name); err != nil {
		t.Fatalf("node %s not Ready: %v", name, err)
	}
}

// ensureClasses installs the driver's DeviceClasses (as the Helm chart does).
func ensureClasses(ctx context.Context, t testing.TB) {
	t.Helper()
	for _, c := range classes.All(driver, classes.Options{ExtendedResource: true}) {
		if _, err := cluster.Client.ResourceV1().DeviceClasses().Create(ctx, &c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// claimPod creates a ResourceClaim and a pod that uses it, pinned to nodes
// with the given label.
func claimPod(ctx context.Context, t *testing.T, name string, nodeLabel map[string]string, spec resourcev1.ResourceClaimSpec) {
	t.Helper()
	ns := "default"
	if _, err := cluster.Client.ResourceV1().ResourceClaims(ns).Create(ctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": name}},
		Spec: corev1.PodSpec{NodeSelector: nodeLabel,
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}},
			Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// outcome waits until pod name runs (returning its claim's allocation) or is
// unschedulable (returning the scheduler's message).
func outcome(ctx context.Context, t *testing.T, name string) (*resourcev1.AllocationResult, string) {
	t.Helper()
	for {
		p, err := cluster.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodRunning {
			c, err := cluster.Client.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return c.Status.Allocation, ""
		}
		if msg := unschedulable(*p); msg != "" {
			return nil, msg
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s neither ran nor was found unschedulable (scheduler log:\n%s)", name, cluster.LogTail("kube-scheduler", 10))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func mustRun(ctx context.Context, t *testing.T, name string) *resourcev1.AllocationResult {
	t.Helper()
	a, msg := outcome(ctx, t, name)
	if a == nil {
		t.Fatalf("pod %s unschedulable: %s", name, msg)
	}
	return a
}

func mustPend(ctx context.Context, t *testing.T, name, reason string) {
	t.Helper()
	a, msg := outcome(ctx, t, name)
	if a != nil {
		t.Fatalf("pod %s got devices %+v, want it Pending", name, a.Devices.Results)
	}
	if !strings.Contains(msg, reason) {
		t.Errorf("pod %s: reason %q, want %q", name, msg, reason)
	}
}

func exactly(class, expr string, count int64, capReq map[resourcev1.QualifiedName]string) resourcev1.ResourceClaimSpec {
	r := &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
	if expr != "" {
		r.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}
	}
	if len(capReq) > 0 {
		r.Capacity = &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{}}
		for k, v := range capReq {
			r.Capacity.Requests[k] = mustQuantity(v)
		}
	}
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: r}}}}
}

// attr is a CEL reference to one of the driver's attributes.
func attr(name string) string { return fmt.Sprintf("device.attributes[%q].%s", driver, name) }

// capacity is a CEL comparison of one of the driver's capacities.
func capacityAtLeast(name, q string) string {
	return fmt.Sprintf("device.capacity[%q].%s.compareTo(quantity(%q)) >= 0", driver, name, q)
}

// deviceOf returns the allocated device's node pool and name.
func deviceOf(a *resourcev1.AllocationResult) (pool, device, request string) {
	r := a.Devices.Results[0]
	return r.Pool, r.Device, r.Request
}

// fleetCase publishes count nodes of profile labelled e2e-case=name and
// creates the namespace name, whose pods release their devices at the end.
func fleetCase(ctx context.Context, t *testing.T, name, profile string, count int) {
	t.Helper()
	startFleet(ctx, t, fmt.Sprintf("  nodePools:\n  - {name: %[1]s, profile: %[2]s, count: %[3]d, labels: {e2e-case: %[1]s}}\n", name, profile, count))
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	releaseDevices(t, name)
}

// releaseDevices deletes a test's Deployments and pods in ns at cleanup and
// waits until the pods are gone, so the claims they held (or were waiting
// for) do not take devices from later tests.
func releaseDevices(t *testing.T, ns string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs := cluster.Client
		_ = cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = cs.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		for {
			_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil && len(pods.Items) == 0 {
				return
			}
			select {
			case <-ctx.Done():
				t.Errorf("pods of %s not gone: %v", ns, err)
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
}
