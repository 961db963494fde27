package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// On shutdown a request in flight finishes before serve returns: the
// process must not exit under it.
func TestServeDrainsBeforeReturning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, h, time.Minute, 0) }()

	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	<-started
	cancel()
	select {
	case err := <-served:
		t.Fatalf("serve returned (%v) with a request in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if got := <-answer; got != "done" {
		t.Errorf("the request in flight got %q, want done", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after the last request ended")
	}
}

// The grace period bounds the drain: a request that never ends does not
// hold the process.
func TestServeGraceBoundsTheDrain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(started)
		<-release
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, h, 100*time.Millisecond, 0) }()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("serve outlived its grace period")
	}
}

// The serving commands refuse a port or a limit they cannot use before
// they start anything.
func TestServeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"emulate", "--port", "70000"}, "--port: 70000"},
		{[]string{"emulate", "--port", "-1"}, "--port: -1"},
		{[]string{"emulate", "--max-concurrent-requests", "-2"}, "--max-concurrent-requests: -2"},
		{[]string{"emulate", "--max-model-len", "-5"}, "max-model-len -5"},
		{[]string{"emulate", "--max-num-seqs", "-1"}, "--max-num-seqs: -1 must be >= 1"},
		{[]string{"emulate", "--max-num-batched-tokens", "-1"}, "--max-num-batched-tokens: -1 must be >= 1"},
		{[]string{"emulate", "--shutdown-grace", "-1s"}, "--shutdown-grace: -1s must be >= 0"},
		{[]string{"frontend", "--workers", "http://127.0.0.1:1", "--port", "65536"}, "--port: 65536"},
		{[]string{"frontend", "--workers", "http://127.0.0.1:1", "--worker-port", "0"}, "--worker-port: 0"},
		{[]string{"frontend", "--workers", "http://127.0.0.1:1", "--max-concurrent-requests", "-1"}, "--max-concurrent-requests: -1"},
		{[]string{"frontend", "--workers", "http://127.0.0.1:1", "--prefill-workers", "http://127.0.0.1:2"}, "give the workers one way"},
		{[]string{"frontend", "--prefill-workers", "http://127.0.0.1:2"}, "--prefill-workers and --decode-workers: give both"},
		{[]string{"frontend", "--prefill-selector", "role=prefill"}, "--prefill-selector and --decode-selector: give both"},
		{[]string{"frontend", "--selector", "a=("}, `--selector: "a=(":`},
		{[]string{"frontend", "--workers", "http://127.0.0.1:1", "-n", "serving"}, "--namespace applies to worker pods found by --selector"},
		{[]string{"frontend", "--prefill-workers", "http://127.0.0.1:1", "--decode-workers", "http://127.0.0.1:2", "--worker-port", "9000"}, "--worker-port applies to worker pods"},
		{[]string{"frontend", "--workers", "http://127.0.0.1:1,http://127.0.0.1:1/"}, `--workers: "http://127.0.0.1:1/" is listed twice`},
	} {
		if _, _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The controller refuses addresses and an image it cannot use before it
// connects to a cluster.
func TestControllerFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-addr", "notanaddr"}, `--metrics-addr: "notanaddr"`},
		{[]string{"--health-addr", ":99999"}, `--health-addr: ":99999": port "99999", want 0 to 65535`},
		{[]string{"--frontend-image", "UPPER CASE:bad"}, "--frontend-image"},
		{[]string{"--metrics-addr", "0", "--health-addr", "127.0.0.1:0"}, "--kubeconfig"}, // valid: it gets as far as the cluster
	} {
		args := append([]string{"controller", "run", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, tc.args...)
		if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
