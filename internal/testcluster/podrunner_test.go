package testcluster

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// The test binary doubles as a pod's process: with this variable set it
// serves its role (its first argument) on 127.0.0.1:<second argument>.
const helperEnv = "GPUPLANE_PODRUNNER_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		serveRole(os.Args[1], os.Args[2])
		return
	}
	os.Exit(m.Run())
}

func serveRole(role, port string) {
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		os.Exit(3)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, role) }), ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	srv.Close()
}

func rolePod(uid, role string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: role + "-" + uid, Namespace: "ns", UID: types.UID(uid), Labels: map[string]string{"role": role}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"}}
}

// testRunner is a pod runner whose pods' processes are this test binary
// serving its role on a free port of 127.0.0.1 (every pod's IP here).
func testRunner(t *testing.T, client kubernetes.Interface) (*PodRunner, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	t.Setenv(helperEnv, "1")
	r := &PodRunner{Client: client, Bin: os.Args[0],
		Command: func(pod *corev1.Pod) ([]string, int) {
			return []string{pod.Labels["role"], strconv.Itoa(port)}, port
		},
		OnError: func(err error) { t.Errorf("runner: %v", err) }}
	r.procs, r.draining, r.evicted = map[types.UID]*podProc{}, map[string]*podProc{}, map[types.UID]bool{}
	return r, port
}

// kwok gives a deleted pod's IP to the next pod: the new pod gets a process
// of its own role, not the gone pod's process that still drains there.
func TestPodRunnerIPReusedByAnotherPod(t *testing.T) {
	r, port := testRunner(t, fake.NewClientset())
	defer r.Stop()
	role := func() string {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/health")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	r.sync(context.Background(), []corev1.Pod{rolePod("a", "decode")})
	if got := role(); got != "decode" {
		t.Fatalf("first pod answers %q, want decode", got)
	}
	// Within one poll the decode pod went and a prefill pod took its IP.
	r.sync(context.Background(), []corev1.Pod{rolePod("b", "prefill")})
	if got := role(); got != "prefill" {
		t.Fatalf("the pod that took the IP answers %q, want prefill", got)
	}
	r.mu.Lock()
	n, drained := len(r.procs), len(r.draining)
	r.mu.Unlock()
	if n != 1 || drained != 0 {
		t.Errorf("%d processes running and %d draining, want 1 and 0", n, drained)
	}
	// A pod whose IP is not reused drains for the grace period and stops.
	r.sync(context.Background(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*drainGrace)
	defer cancel()
	for role() == "prefill" {
		select {
		case <-ctx.Done():
			t.Fatal("the gone pod's process never stopped")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kwok can give two live pods one IP: the pod that has a process keeps it,
// the other is deleted (once) for its controller to replace, and nothing
// is reported as a failure to start.
func TestPodRunnerDuplicateIPEvictsTheNewerPod(t *testing.T) {
	a, b := rolePod("a", "decode"), rolePod("b", "prefill")
	client := fake.NewClientset(&a, &b)
	r, _ := testRunner(t, client)
	defer r.Stop()
	ctx := context.Background()
	// Both new in one poll (as when two Deployments start together), and
	// the next poll may still list the deleted one.
	r.sync(ctx, []corev1.Pod{a, b})
	r.sync(ctx, []corev1.Pod{a, b})
	pods, err := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].UID != "a" {
		t.Fatalf("pods left: %v, want only a", podNames(pods.Items))
	}
	deletes := 0
	for _, act := range client.Actions() {
		if act.GetVerb() == "delete" {
			deletes++
		}
	}
	if deletes != 1 {
		t.Errorf("%d deletes, want 1", deletes)
	}
	r.mu.Lock()
	n := len(r.procs)
	r.mu.Unlock()
	if n != 1 {
		t.Errorf("%d processes, want 1 (the decode pod's)", n)
	}
	// Once the deleted pod is no longer listed, the runner forgets it.
	r.sync(ctx, []corev1.Pod{a})
	r.mu.Lock()
	left := len(r.evicted)
	r.mu.Unlock()
	if left != 0 {
		t.Errorf("%d evicted pods remembered after they are gone, want 0", left)
	}
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
