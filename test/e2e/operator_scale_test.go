//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/operator/controller"
)

// TestControllerHundredObjects runs `gpuplane controller run` as its own
// process, applies 100 ServingDeployments on a fleet of 25 HGX H100 nodes,
// waits until every one is Ready, and reports the controller's memory and
// reconcile and plan latency from its own /metrics.
func TestControllerHundredObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns, n = "scale", 100
	fleetCase(ctx, t, ns, "hgx-h100", 25)
	c := installCRDs(ctx, t)
	// The objects go with the test, so later controllers do not find them.
	t.Cleanup(func() {
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.ServingDeployment{}, client.InNamespace(ns))
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctl := exec.Command(buildGPUPlane(t), "controller", "run", "--kubeconfig", cluster.Kubeconfig, "--metrics-addr", addr, "--health-addr", "0")
	logs, err := os.Create(t.TempDir() + "/controller.log")
	if err != nil {
		t.Fatal(err)
	}
	ctl.Stderr = logs
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ctl.Process.Kill(); _ = ctl.Wait() }()

	t0 := time.Now()
	for i := range n {
		sd := servingDeployment(ns, fmt.Sprintf("m%03d", i))
		sd.Spec.Planner = v1alpha1.PlannerSpec{Mode: "advisory", IntervalSeconds: 30, StartupSeconds: 30}
		sd.Spec.Serving.NodeSelector = map[string]string{"e2e-case": "scale"}
		if err := c.Create(ctx, sd); err != nil {
			t.Fatal(err)
		}
	}
	for {
		var list v1alpha1.ServingDeploymentList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, sd := range list.Items {
			if meta.IsStatusConditionTrue(sd.Status.Conditions, controller.CondReady) {
				ready++
			}
		}
		if ready == n {
			break
		}
		select {
		case <-ctx.Done():
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("%d of %d Ready; controller log tail:\n%s", ready, n, tail(string(b), 3000))
		case <-time.After(time.Second):
		}
	}
	allReady := time.Since(t0)
	time.Sleep(2 * time.Second) // a few more reconciles and planner ticks land in the metrics
	mfs := scrapeMetrics(t, "http://"+addr+"/metrics")
	gauge := func(name string) float64 {
		if mf := mfs[name]; mf != nil {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
		return 0
	}
	hist := func(name string) string {
		mf := mfs[name]
		if mf == nil {
			return "none"
		}
		h := mf.GetMetric()[0].GetHistogram()
		return fmt.Sprintf("%d, mean %.1f ms", h.GetSampleCount(), 1000*h.GetSampleSum()/max(float64(h.GetSampleCount()), 1))
	}
	rss := gauge("process_resident_memory_bytes") / (1 << 20)
	heap := gauge("go_memstats_heap_inuse_bytes") / (1 << 20)
	t.Logf("%d ServingDeployments Ready %s after the first apply; controller RSS %.0f MiB, heap in use %.0f MiB", n, allReady.Round(100*time.Millisecond), rss, heap)
	t.Logf("reconciles %s; plans %s; planner ticks %s", hist("gpuplane_controller_reconcile_seconds"), hist("gpuplane_controller_plan_seconds"), hist("gpuplane_controller_planner_tick_seconds"))
	if rss == 0 || rss > 1024 {
		t.Errorf("controller RSS %.0f MiB with %d objects; want it read and under 1 GiB", rss, n)
	}
}

func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
