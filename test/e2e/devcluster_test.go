//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuplane/gpuplane/internal/cli"
)

// The API server reports the Kubernetes release it was built from, so
// kubectl version and client version checks work against it.
func TestServerVersion(t *testing.T) {
	v, err := cluster.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.GitVersion, "v1.37.") || v.Major != "1" || v.Minor != "37" {
		t.Errorf("server version %+v, want v1.37.x", v)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `dev cluster up --gpu-nodes` as a person runs it: an absolute
// KUBECONFIG, GPU nodes that publish slices, the driver's classes; `down
// --purge` leaves nothing behind.
func TestDevClusterUp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	var out, errb syncBuffer
	kubeconfig, stop := devClusterUp(t, &out, &errb, "--dir", dir, "--gpu-nodes", "2")
	defer stop()
	if !filepath.IsAbs(kubeconfig) {
		t.Fatalf("KUBECONFIG %q is not absolute:\n%s", kubeconfig, out.String())
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(rc)
	bg := context.Background()
	nodes, err := client.CoreV1().Nodes().List(bg, metav1.ListOptions{LabelSelector: "nvidia.com/gpu.present=true"})
	if err != nil || len(nodes.Items) != 2 {
		t.Fatalf("GPU nodes: %v, %v", nodes, err)
	}
	published := map[string]int{}
	list, err := client.ResourceV1().ResourceSlices().List(bg, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Spec.NodeName != nil {
			published[*s.Spec.NodeName] += len(s.Spec.Devices)
		}
	}
	for _, n := range nodes.Items {
		if published[n.Name] != 8 {
			t.Errorf("node %s publishes %d devices, want its 8 GPUs", n.Name, published[n.Name])
		}
	}
	classes, err := client.ResourceV1().DeviceClasses().List(bg, metav1.ListOptions{})
	if err != nil || len(classes.Items) < 3 {
		t.Errorf("DeviceClasses: %d, %v; want gpu, mig and vgpu.gpuplane.io", len(classes.Items), err)
	}
	stop()
	down := cli.NewRoot(&out, &errb)
	down.SetArgs([]string{"dev", "cluster", "down", "--dir", dir, "--purge"})
	if err := down.Execute(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("--purge left %s: %v", dir, err)
	}
}

// devClusterUp runs `gpuplane dev cluster up --no-build` with args until
// stop, and returns the KUBECONFIG it prints. stop may be called twice.
func devClusterUp(t *testing.T, out, errb *syncBuffer, args ...string) (string, func()) {
	t.Helper()
	root := cli.NewRoot(out, errb)
	root.SetArgs(append([]string{"dev", "cluster", "up", "--no-build"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("dev cluster up: %v", err)
			}
		})
	}
	re := regexp.MustCompile(`export KUBECONFIG=(\S+)`)
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("dev cluster up ended: %v\n%s", err, errb.String())
		default:
		}
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1], stop
		}
	}
	stop()
	t.Fatalf("dev cluster up printed no KUBECONFIG:\n%s\n%s", out.String(), errb.String())
	return "", nil
}
