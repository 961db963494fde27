package cli

import (
	"os"
	"testing"
)

// TestMain keeps --kernels' cache of parsed tables (the user's cache
// folder by default) inside a folder of the test run's own.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpuplane-cli-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
