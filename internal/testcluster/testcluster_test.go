package testcluster

import (
	"context"
	"strings"
	"testing"
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
