// Package imagebuild builds gpuplane's container images without a
// container engine: a Go binary (and, for cgo binaries, the shared
// libraries it links) in one layer on an empty base, written with
// go-containerregistry into an OCI image layout that registries and
// runtimes take (crane push, skopeo copy, containerd import).
package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RefAnnotation names an image in the layout's index.
const RefAnnotation = "org.opencontainers.image.ref.name"

// BinDir is where the binary goes; it is on the image's PATH, so pods can
// name the command ("gpuplane emulate ...").
const BinDir = "/usr/local/bin"

// NonRoot is the user the images run as unless a pod says otherwise.
const NonRoot = "65532"

// Spec is one image.
type Spec struct {
	// Ref is the image's name and pinned tag, e.g. ghcr.io/gpuplane/gpuplane:v0.1.0.
	Ref string
	// Binary is the built executable; it becomes BinDir/<Name>.
	Binary, Name string
	// Libs are host files the binary loads (a cgo binary's loader and libc),
	// copied to the same paths.
	Libs []string
	// Args are the default arguments after the entrypoint.
	Args []string
	// User overrides NonRoot (the DRA driver needs root for the device nodes).
	User   string
	Arch   string
	Labels map[string]string
}

// Image assembles the image of s. Every file time is the epoch, so the
// same binary gives the same digest.
func Image(s Spec) (v1.Image, error) {
	files := map[string]string{path.Join(BinDir, s.Name): s.Binary}
	for _, l := range s.Libs {
		files[l] = l
	}
	layerTar, err := tarFiles(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("%s: layer: %w", s.Ref, err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = s.Arch, "linux"
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	user := s.User
	if user == "" {
		user = NonRoot
	}
	cf.Config = v1.Config{
		Entrypoint: []string{path.Join(BinDir, s.Name)},
		Cmd:        s.Args,
		Env:        []string{"PATH=" + BinDir + ":/usr/bin:/bin", "HOME=/tmp"},
		User:       user,
		WorkingDir: "/",
		Labels:     s.Labels,
	}
	return mutate.ConfigFile(img, cf)
}

// tarFiles writes files (image path -> host path) with their parent
// directories and a world-writable /tmp.
func tarFiles(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{"/tmp": true}
	for p := range files {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		mode := int64(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b, err := os.ReadFile(files[p])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p[1:], Mode: 0o755, Size: int64(len(b)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write puts the images into an OCI layout at dir (created anew), each
// named by its Ref.
func Write(dir string, imgs map[string]v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("oci layout %s: %w", dir, err)
	}
	refs := make([]string, 0, len(imgs))
	for r := range imgs {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	for _, r := range refs {
		if err := p.AppendImage(imgs[r], layout.WithAnnotations(map[string]string{RefAnnotation: r})); err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
	}
	return nil
}
