//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/cli"
	"github.com/gpuplane/gpuplane/internal/testcluster"
)

// TestConfigureEmitDeploys: `gpuplane configure --emit k8s` for the
// reference request, applied to the real control plane next to a node that
// publishes eight H200s. The API server accepts every object (CEL compiled
// included), the real scheduler allocates every claim through the emitted
// selectors, kwok runs all pods, and one replica more than the node holds
// stays Pending on claim allocation.
func TestConfigureEmitDeploys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := cluster.Client
	const ns = "configure-e2e"

	var out, stderr bytes.Buffer
	root := cli.NewRoot(&out, &stderr)
	root.SetArgs([]string{"configure", "-f", "../../examples/serving-request.yaml", "--emit", "k8s", "--namespace", ns, "--name", "ref"})
	if err := root.Execute(); err != nil {
		t.Fatalf("configure: %v\n%s", err, stderr.String())
	}
	t.Log(strings.TrimSpace(stderr.String()))

	node := gpuNode(ctx, t, testcluster.GPUNode{Name: "h200-node-0", InstanceType: "Standard_ND96isr_H200_v5",
		NodePool: "h200", GPUProduct: "NVIDIA-H200", GPUs: 8}, "hgx-h200")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	releaseDevices(t, ns)

	// The search may pick any mix of parallelism, so count what the claims
	// ask for: replicas times the devices of each template a pod references.
	want, gpus := 0, 0
	perClaim := map[string]int{}
	type podsOf struct {
		replicas  int
		templates []string
	}
	var workers []podsOf
	decode := scheme.Codecs.UniversalDeserializer()
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		obj, _, err := decode.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode emitted document: %v\n%s", err, doc)
		}
		switch o := obj.(type) {
		case *resourcev1.ResourceClaimTemplate:
			for _, r := range o.Spec.Spec.Devices.Requests {
				if r.Exactly != nil {
					perClaim[o.Name] += int(r.Exactly.Count)
				}
			}
			_, err = cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			if len(o.Spec.Template.Spec.ResourceClaims) > 0 { // the router claims no GPU
				w := podsOf{replicas: int(*o.Spec.Replicas)}
				for _, c := range o.Spec.Template.Spec.ResourceClaims {
					if c.ResourceClaimTemplateName == nil {
						t.Fatalf("deployment %s: claim %s names no template", o.Name, c.Name)
					}
					w.templates = append(w.templates, *c.ResourceClaimTemplateName)
				}
				workers = append(workers, w)
				want += w.replicas
			}
			_, err = cs.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = cs.CoreV1().Services(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("unexpected emitted kind %T", obj)
		}
		if err != nil {
			t.Fatalf("the API server refused an emitted object: %v\n%s", err, doc)
		}
	}
	for _, w := range workers {
		for _, name := range w.templates {
			n, ok := perClaim[name]
			if !ok || n < 1 {
				t.Fatalf("a deployment references claim template %q, which was not emitted or asks for no device", name)
			}
			gpus += w.replicas * n
		}
	}
	if gpus != 8 {
		t.Fatalf("the reference search should fill the 8 GPUs, the manifests ask for %d over %d pods", gpus, want)
	}
	running := waitPods(ctx, t, ns, "app.kubernetes.io/name=ref,gpuplane.io/role!=frontend", want, 0)

	// Every claim got an H200 of the node, none twice.
	claims, err := cs.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range claims.Items {
		if c.Status.Allocation == nil {
			t.Errorf("claim %s not allocated", c.Name)
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != driver || r.Pool != node.Name || seen[r.Device] {
				t.Errorf("claim %s: allocation %+v", c.Name, r)
			}
			seen[r.Device] = true
		}
	}
	if len(seen) != gpus || len(running) != want {
		t.Errorf("%d devices allocated to %d running pods, want %d and %d", len(seen), len(running), gpus, want)
	}

	// One more decode replica than the node holds stays Pending on its claim.
	// The Deployment controller writes the object too: retry on a conflict,
	// aiming at one more than the replicas first read.
	target := int32(-1)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "ref-decode", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if target < 0 {
			target = *dep.Spec.Replicas + 1
		}
		dep.Spec.Replicas = ptr.To(target)
		_, err = cs.AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitPods(ctx, t, ns, "app.kubernetes.io/name=ref,gpuplane.io/role!=frontend", want, 1)
}

// waitPods waits for exactly running Running and pending unschedulable
// pods under selector; an unschedulable one must fail on claim allocation.
func waitPods(ctx context.Context, t *testing.T, ns, selector string, running, pending int) []corev1.Pod {
	t.Helper()
	for {
		pods, err := cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		var run, pend []corev1.Pod
		for _, p := range pods.Items {
			switch {
			case p.Status.Phase == corev1.PodRunning:
				run = append(run, p)
			case unschedulable(p) != "":
				pend = append(pend, p)
			}
		}
		if len(run) == running && len(pend) == pending {
			for _, p := range pend {
				if msg := unschedulable(p); !strings.Contains(msg, "cannot allocate all claims") {
					t.Errorf("pending pod %s: reason %q does not name the claim allocation", p.Name, msg)
				}
			}
			return run
		}
		select {
		case <-ctx.Done():
			t.Fatalf("want %d Running and %d unschedulable pods, have %d and %d (scheduler log:\n%s)", running, pending,
				len(run), len(pend), cluster.LogTail("kube-scheduler", 10))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
