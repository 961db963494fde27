package testcluster

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestMissingBinariesSayHowToBuild(t *testing.T) {
	_, err := Start(context.Background(), Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "hack/build-cluster-bins.sh") || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("want an error naming the missing binaries and the build script, got %v", err)
	}
}

func TestFreePortsAreDistinctLoopbackPorts(t *testing.T) {
	ps, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v", ps)
		}
		seen[p] = true
	}
}

// Outside a checkout there is no build script: the error says what to do.
func TestBuildOutsideACheckoutSaysWhat(t *testing.T) {
	t.Chdir(t.TempDir())
	err := BuildBinaries(t.Context(), t.TempDir(), io.Discard, time.Second)
	if err == nil || !strings.Contains(err.Error(), "--bin-dir") {
		t.Errorf("got %v, want an error naming --bin-dir", err)
	}
}

// The kubelet's configuration as the file says it: fields whose zero
// value the kubelet would replace with its default must be written out.
func TestKubeletConfigFile(t *testing.T) {
	b, err := yaml.Marshal(kubeletConfig("unix:///r/cri.sock", "/s", "/l", 10250, 10248))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failCgroupV1: false", "cgroupsPerQOS: false", "enforceNodeAllocatable:\n- none",
		"failSwapOn: false", "address: 127.0.0.1", "healthzBindAddress: 127.0.0.1", "containerRuntimeEndpoint: unix:///r/cri.sock",
		"resolvConf: \"\"", "imageGCHighThresholdPercent: 100", "mode: AlwaysAllow", "nodefs.available: 0%"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("kubelet config lacks %q:\n%s", want, b)
		}
	}
}
