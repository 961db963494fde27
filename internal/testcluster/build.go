package testcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// RepoRoot is the gpuplane checkout above the working directory (the
// folder with go.mod and hack/build-cluster-bins.sh), or "" outside one.
func RepoRoot() string {
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "build-cluster-bins.sh")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return d
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// BuildBinaries builds the control plane into binDir with the checkout's
// hack/build-cluster-bins.sh, writing its output and, every interval, the
// time spent to progress; the first build takes 8-17 minutes on 2 cores.
func BuildBinaries(ctx context.Context, binDir string, progress io.Writer, interval time.Duration) error {
	root := RepoRoot()
	if root == "" {
		return fmt.Errorf("the control-plane binaries are built from a gpuplane checkout (hack/build-cluster-bins.sh); run this from one, or give --bin-dir with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and kwok-stages/")
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "build-cluster-bins.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GPUPLANE_BIN_DIR="+binDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout // one stream, in order
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("build control-plane binaries: %w", err)
	}
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(progress, "[build %5s] "+format+"\n", append([]any{time.Since(t0).Round(time.Second)}, a...)...)
	}
	say("building etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kwok into %s (8-17 minutes the first time, seconds after)", binDir)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				say("still building")
			}
		}
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		say("%s", sc.Text())
	}
	err = cmd.Wait()
	close(done)
	if err != nil {
		return fmt.Errorf("build control-plane binaries (hack/build-cluster-bins.sh): %w", err)
	}
	if err := CheckBinaries(binDir); err != nil {
		return err
	}
	say("done")
	return nil
}
