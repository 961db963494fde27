package testcluster

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
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
