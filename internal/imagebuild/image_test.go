package imagebuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// A static binary (the test's own helper) goes into an image, the layout
// is written, read back, and its entrypoint runs.
func TestImageRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nimport \"os\"\nfunc main() { if len(os.Args) > 1 && os.Args[1] == \"--help\" { os.Exit(0) }; os.Exit(3) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	img, err := Image(Spec{Ref: "example.test/hello:v1", Binary: bin, Name: "hello", Arch: "amd64", Args: []string{"--help"}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Image(Spec{Ref: "example.test/hello:v1", Binary: bin, Name: "hello", Arch: "amd64", Args: []string{"--help"}})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("the same binary gave digests %s and %s; the build must be reproducible", d1, d2)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != NonRoot || cf.Config.Entrypoint[0] != "/usr/local/bin/hello" || !strings.Contains(strings.Join(cf.Config.Env, " "), "PATH=/usr/local/bin") {
		t.Errorf("config %+v", cf.Config)
	}
	out := filepath.Join(dir, "layout")
	if err := Write(out, map[string]v1.Image{"example.test/hello:v1": img}); err != nil {
		t.Fatal(err)
	}
	entries, err := Check(out, "--help")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Ref != "example.test/hello:v1" || entries[0].Digest != d1.String() {
		t.Errorf("read back %+v, want the one image at %s", entries, d1)
	}
	// An entrypoint that fails is reported.
	if _, err := Check(out, "--other"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing entrypoint: %v", err)
	}
}
