package cli

import (
	"bytes"
	"os"
	"strings"
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

// As a kubectl plugin the help says how kubectl runs it.
func TestPluginNameInHelp(t *testing.T) {
	var out bytes.Buffer
	root := newRootAs("kubectl gpuplane", &out, &out)
	root.SetArgs([]string{"explain", "pod", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kubectl gpuplane explain pod") {
		t.Errorf("plugin help:\n%s", out.String())
	}
}
