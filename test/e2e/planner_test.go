//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/cli"
	"github.com/gpuplane/gpuplane/internal/plannerlive/plannerlivetest"
)

// fakePrometheus answers the query API with a burst: 12 req/s of
// 4000-token prompts and 500-token answers, TTFT 200 ms, ITL 20 ms.
func fakePrometheus(t *testing.T) *plannerlivetest.Prometheus {
	values := map[string]string{
		"sum(increase(vllm:request_success_total{role=\"prefill\"}": "360",
		"sum(increase(vllm:prompt_tokens_total":                     "1440000",
		"sum(increase(vllm:request_success_total{role=\"decode\"}":  "360",
		"sum(increase(vllm:generation_tokens_total":                 "180000",
		"sum(increase(vllm:time_to_first_token_seconds_sum":         "72",
		"sum(increase(vllm:time_to_first_token_seconds_count":       "360",
		"sum(increase(vllm:inter_token_latency_seconds_sum":         "3600",
		"sum(increase(vllm:inter_token_latency_seconds_count":       "180000",
		"sum(vllm:num_requests_running":                             "2",
		"avg(vllm:kv_cache_usage_perc":                              "0.4",
	}
	s := plannerlivetest.NewPrometheus(values)
	t.Cleanup(s.Close)
	return s
}

// TestPlannerScalesThroughScaleSubresource: `gpuplane planner run --once`
// reads a burst from the Prometheus query API and scales two real
// Deployments through /scale; --dry-run leaves them alone.
func TestPlannerScalesThroughScaleSubresource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := cluster.Client
	const ns = "planner-e2e"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"prefill", "decode"} {
		labels := map[string]string{"app": "qwen", "role": role}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "qwen-" + role},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	prom := fakePrometheus(t)
	cfg := filepath.Join(t.TempDir(), "planner.yaml")
	body := fmt.Sprintf(`planner: {intervalSeconds: 30, ttftMs: 500, itlMs: 30, startupDelaySeconds: 90, predictor: holt}
engine: {model: Qwen/Qwen3-32B, gpu: h100_sxm, precision: fp8, backend: vllm, prefillTp: 1, decodeTp: 4}
metrics:
  prometheus: {url: %q, prefillSelector: 'role="prefill"', decodeSelector: 'role="decode"'}
targets:
  prefill: {group: apps, version: v1, resource: deployments, namespace: %[2]s, name: qwen-prefill}
  decode: {group: apps, version: v1, resource: deployments, namespace: %[2]s, name: qwen-decode}
`, prom.URL, ns)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	runPlanner := func(extra ...string) string {
		var out, errb bytes.Buffer
		root := cli.NewRoot(&out, &errb)
		root.SetArgs(append([]string{"planner", "run", "--config", cfg, "--kubeconfig", cluster.Kubeconfig, "--once"}, extra...))
		if err := root.Execute(); err != nil {
			t.Fatalf("planner run: %v\n%s", err, errb.String())
		}
		return out.String()
	}
	replicas := func(role string) int32 {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "qwen-"+role, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	advice := runPlanner("--dry-run")
	if replicas("prefill") != 1 || replicas("decode") != 1 {
		t.Errorf("--dry-run scaled the pools: %q", advice)
	}
	out := runPlanner()
	var pre, dec int32
	if _, err := fmt.Sscanf(out, "prefill %d, decode %d:", &pre, &dec); err != nil {
		t.Fatalf("planner output %q: %v", out, err)
	}
	t.Log(strings.TrimSpace(out))
	if pre < 2 {
		t.Errorf("12 req/s of 4000-token prompts on one H100 prefill worker: planner wants %d", pre)
	}
	if replicas("prefill") != pre || replicas("decode") != dec {
		t.Errorf("deployments at %d + %d, planner decided %d + %d", replicas("prefill"), replicas("decode"), pre, dec)
	}
}
