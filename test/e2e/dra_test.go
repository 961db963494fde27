//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/dra/slices"
	"github.com/gpuplane/gpuplane/internal/testcluster"
)

const driver = "gpu.gpuplane.io"

// TestSchedulerAllocatesClaimsFromResourceSlices: a node publishes two GPUs,
// a Deployment of three replicas each claims one; the real scheduler
// allocates two, kwok runs them, the third stays Pending with the
// scheduler's reason.
func TestSchedulerAllocatesClaimsFromResourceSlices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := cluster.Client
	node := gpuNode(ctx, t, testcluster.GPUNode{Name: "gpu-node-0", InstanceType: "Standard_NC80adis_H100_v5",
		NodePool: "h100", GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUs: 2}, "hgx-h100")
	ns := "dra-e2e"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	releaseDevices(t, ns)
	if _, err := cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "one-gpu"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: "gpu.gpuplane.io",
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					// The product keeps other tests' GPU nodes out of this one.
					Expression: `device.capacity["` + driver + `"].memory.compareTo(quantity("40Gi")) >= 0 && ` +
						`device.attributes["` + driver + `"].productName == "NVIDIA H100 80GB HBM3"`}}},
			}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "vllm-decode"}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "vllm-decode"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				// Other tests publish H100s too; this one is about its own node.
				NodeSelector:   map[string]string{"kubernetes.io/hostname": node.Name},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}},
				Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai",
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running, pending []corev1.Pod
	for {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vllm-decode"})
		if err != nil {
			t.Fatal(err)
		}
		running, pending = nil, nil
		for _, p := range pods.Items {
			switch {
			case p.Status.Phase == corev1.PodRunning:
				running = append(running, p)
			case unschedulable(p) != "":
				pending = append(pending, p)
			}
		}
		if len(running) == 2 && len(pending) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("want 2 Running and 1 unschedulable pod, have %d and %d (scheduler log:\n%s)", len(running), len(pending),
				cluster.LogTail("kube-scheduler", 10))
		case <-time.After(250 * time.Millisecond):
		}
	}
	if msg := unschedulable(pending[0]); !strings.Contains(msg, "cannot allocate all claims") {
		t.Errorf("pending pod's reason %q does not name the claim allocation", msg)
	}
	// Each running pod holds its own device, allocated on the GPU node.
	seen := map[string]bool{}
	claims, err := cs.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != driver || r.Pool != node.Name || seen[r.Device] {
				t.Errorf("claim %s: allocation %+v", c.Name, r)
			}
			seen[r.Device] = true
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d devices allocated, want 2: %v", len(seen), seen)
	}
}

func unschedulable(p corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// gpuNode creates a kwok GPU node, the driver's DeviceClasses and the
// node's ResourceSlices as the driver lays out a machine of the profile.
func gpuNode(ctx context.Context, t *testing.T, n testcluster.GPUNode, profile string) *corev1.Node {
	t.Helper()
	node, err := cluster.CreateGPUNode(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	ensureClasses(ctx, t)
	c := catalog.MustDefault()
	p, err := profiles.Lookup(c, profile)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := profiles.Discover(c, p, profiles.Node{Name: node.Name, GPUs: n.GPUs})
	if err != nil {
		t.Fatal(err)
	}
	r, err := slices.Build(inv, slices.Features{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range r.ResourceSlices(driver, node.Name) {
		if _, err := cluster.Client.ResourceV1().ResourceSlices().Create(ctx, &rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return node
}
