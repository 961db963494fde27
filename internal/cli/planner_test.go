package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/emulate/emulatetest"
)

// A dry run needs no cluster: with no kubeconfig it starts from the given
// replicas and prints its decision.
func TestPlannerDryRunWithoutACluster(t *testing.T) {
	pre, _ := emulatetest.Start(t, "prefill")
	dec, _ := emulatetest.Start(t, "decode")
	cfg := filepath.Join(t.TempDir(), "planner.yaml")
	doc := `planner: {intervalSeconds: 30, ttftMs: 500, itlMs: 30, ttftPercentile: 90}
engine: {model: Qwen/Qwen3-8B, gpu: h100_sxm, precision: fp8, backend: vllm}
metrics:
  scrape: {prefill: ["` + pre + `/metrics"], decode: ["` + dec + `/metrics"]}
targets:
  prefill: {group: apps, version: v1, resource: deployments, namespace: llm, name: p}
  decode: {group: apps, version: v1, resource: deployments, namespace: llm, name: d}
listen: "127.0.0.1:0"
`
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	out, _, err := run(t, "planner", "run", "--config", cfg, "--dry-run", "--once", "--prefill-replicas", "2")
	if err != nil {
		t.Fatalf("dry run without a cluster: %v", err)
	}
	if !strings.Contains(out, "prefill 2, decode 1") {
		t.Errorf("the dry run should start from 2 + 1 and hold on its first scrape:\n%s", out)
	}
	if _, _, err := run(t, "planner", "run", "--config", cfg, "--once"); err == nil || !strings.Contains(err.Error(), "--dry-run") {
		t.Errorf("a real run without a cluster: got %v, want an error pointing at --dry-run", err)
	}
	// The starting replicas were raised to 1 or ignored; now they are refused by flag.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dry-run", "--prefill-replicas", "-1"}, "--prefill-replicas: -1, want 1 to 1024"},
		{[]string{"--dry-run", "--decode-replicas", "0"}, "--decode-replicas: 0, want 1 to 1024"},
		{[]string{"--prefill-replicas", "3"}, "--prefill-replicas: applies to a dry run without a cluster"},
	} {
		args := append([]string{"planner", "run", "--config", cfg, "--once"}, tc.args...)
		if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// Overload is refused at once with 429, in OpenAI's error shape.
func TestConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := limitConcurrent(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
	}), 1)
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		resp, err := http.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		close(done)
	}()
	<-started
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"rate_limit_error"`) {
		t.Errorf("second request: %d %s", resp.StatusCode, b)
	}
	close(release)
	<-done
}
