//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuplane/gpuplane/internal/cli"
	"github.com/gpuplane/gpuplane/internal/explain"
)

// TestExplainAgreesWithScheduler cross-checks explain against the real
// scheduler on everything the earlier tests left in the cluster: every pod
// the scheduler placed is explained as allocatable on its node (its own
// devices counted free), every pod it left Pending on claim allocation is
// explained as not allocatable.
func TestExplainAgreesWithScheduler(t *testing.T) {
	ctx := ctxFor(t)
	snap := func() *explain.Snapshot {
		s, err := explain.Live(ctx, cluster.Client)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddPods(ctx, cluster.Client, ""); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := snap()
	placed, pending := 0, 0
	for _, p := range s.Pods {
		if len(p.Spec.ResourceClaims) == 0 && p.Status.ExtendedResourceClaimStatus == nil {
			continue
		}
		running := p.Status.Phase == corev1.PodRunning
		stuck := strings.Contains(unschedulable(*p), "cannot allocate all claims")
		if !running && !stuck {
			continue
		}
		rep, err := explain.ExplainPod(ctx, s, p.Namespace, p.Name)
		if err != nil {
			t.Errorf("explain pod %s/%s: %v", p.Namespace, p.Name, err)
			continue
		}
		if running {
			placed++
			if !rep.Allocatable || !slices.Contains(rep.FitsOn, p.Spec.NodeName) {
				t.Errorf("pod %s/%s runs on %s, explain: allocatable=%v on %v", p.Namespace, p.Name, p.Spec.NodeName, rep.Allocatable, rep.FitsOn)
			}
			continue
		}
		pending++
		if rep.Allocatable {
			// The scheduler retries with back-off; give it time before calling it a disagreement.
			if !scheduledWithin(ctx, p.Namespace, p.Name, 15*time.Second) {
				var b bytes.Buffer
				rep.WriteText(&b, false)
				t.Errorf("pod %s/%s stays Pending, explain says allocatable:\n%s", p.Namespace, p.Name, b.String())
			}
			continue
		}
		if len(rep.Fixes) == 0 {
			t.Errorf("pod %s/%s: no fixes proposed", p.Namespace, p.Name)
		}
	}
	if placed < 10 || pending < 4 {
		t.Errorf("cross-checked %d placed and %d pending pods; the earlier tests should leave more", placed, pending)
	}
	t.Logf("explain agrees with the scheduler on %d placed and %d pending pods", placed, pending)

	// The command line on the live cluster, for the Pending MIG pod.
	var out, errb bytes.Buffer
	root := cli.NewRoot(&out, &errb)
	root.SetArgs([]string{"explain", "pod", "mig-e", "--kubeconfig", cluster.Kubeconfig})
	if err := root.Execute(); err != nil {
		t.Fatalf("explain pod: %v\n%s", err, errb.String())
	}
	for _, want := range []string{"NOT allocatable", "counter", "memory-slice-", "used up by default/mig-", "nearest fixes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain pod mig-e output lacks %q:\n%s", want, out.String())
		}
	}
	t.Log("\n" + out.String())
}

func scheduledWithin(ctx context.Context, ns, name string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		p, err := cluster.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Spec.NodeName != "" {
			return true
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false
}
