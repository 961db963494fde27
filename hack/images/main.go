// Command images builds gpuplane's container images without a container
// engine into an OCI image layout, and with --check runs each image's
// entrypoint read back from the layout.
//
//	go run ./hack/images --out .cache/images --check
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/imagebuild"
)

func main() {
	out := flag.String("out", ".cache/images", "OCI layout directory to write (replaced)")
	repo := flag.String("repo", "ghcr.io/gpuplane", "image repository prefix")
	version := flag.String("version", "", "image tag and binary version (default: the charts' appVersion, v-prefixed)")
	check := flag.Bool("check", false, "read the layout back and run every entrypoint with --help")
	flag.Parse()
	if err := run(*out, *repo, *version, *check); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(out, repo, version string, check bool) error {
	if version == "" {
		v, err := chartVersion("deploy/helm/gpuplane/Chart.yaml")
		if err != nil {
			return err
		}
		version = "v" + v
	}
	tmp, err := os.MkdirTemp("", "images")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ldflags := "-s -w -X github.com/gpuplane/gpuplane/internal/cli.Version=" + version
	labels := map[string]string{"org.opencontainers.image.version": version, "org.opencontainers.image.source": "gpuplane"}
	imgs := map[string]v1.Image{}
	// gpuplane is pure Go: static, no libraries.
	gp := filepath.Join(tmp, "gpuplane")
	if err := build(gp, "./cmd/gpuplane", ldflags, false); err != nil {
		return err
	}
	// The driver loads NVML through cgo: it carries its loader and libc.
	drv := filepath.Join(tmp, "gpuplane-dra-driver")
	if err := build(drv, "./cmd/gpuplane-dra-driver", ldflags, true); err != nil {
		return err
	}
	libs, err := sharedLibs(drv)
	if err != nil {
		return err
	}
	for _, s := range []imagebuild.Spec{
		{Ref: repo + "/gpuplane:" + version, Binary: gp, Name: "gpuplane", Arch: runtime.GOARCH, Labels: labels},
		{Ref: repo + "/gpuplane-dra-driver:" + version, Binary: drv, Name: "gpuplane-dra-driver", Libs: libs, User: "0", Arch: runtime.GOARCH, Labels: labels},
	} {
		img, err := imagebuild.Image(s)
		if err != nil {
			return err
		}
		imgs[s.Ref] = img
	}
	if err := imagebuild.Write(out, imgs); err != nil {
		return err
	}
	for ref, img := range imgs {
		d, _ := img.Digest()
		fmt.Printf("%s@%s\n", ref, d)
	}
	if check {
		entries, err := imagebuild.Check(out, "--help")
		if err != nil {
			return err
		}
		for _, e := range entries {
			fmt.Printf("checked %s: entrypoint %v runs (user %s)\n", e.Ref, e.Entrypoint, e.User)
		}
	}
	return nil
}

func build(out, pkg, ldflags string, cgo bool) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	if cgo {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

var lddPath = regexp.MustCompile(`(/[^\s]+\.so[^\s]*)`)

// sharedLibs lists the files a dynamic binary loads, as ldd reports them.
func sharedLibs(bin string) ([]string, error) {
	o, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	for _, l := range strings.Split(string(o), "\n") {
		if m := lddPath.FindString(l); m != "" {
			if _, err := os.Stat(m); err == nil {
				libs = append(libs, m)
			}
		}
	}
	return libs, nil
}

func chartVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if chart.AppVersion == "" {
		return "", fmt.Errorf("%s: no appVersion", path)
	}
	return chart.AppVersion, nil
}
