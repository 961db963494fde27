// Package sharedtest finds the read-only reference data that sits beside
// the project in ../shared, for tests. CI always has it; a developer's
// machine may not.
package sharedtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Path returns the path of elem under the shared folder. When the file is
// missing the test is skipped, or fails when the CI variable is set, so CI
// never passes by skipping.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("sharedtest: cannot locate its own source file")
	}
	// This file is internal/sharedtest/sharedtest.go; shared/ is beside the repository.
	root := filepath.Dir(filepath.Dir(filepath.Dir(self)))
	path := filepath.Join(append([]string{root, "..", "shared"}, elem...)...)
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("shared data must be present in CI: %v", err)
		}
		t.Skipf("shared data not available: %v", err)
	}
	return path
}
