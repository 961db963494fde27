package imagebuild

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Entry is one image of a layout as read back.
type Entry struct {
	Ref, Digest string
	Entrypoint  []string
	User        string
}

// Check reads every image of the layout at dir back, extracts its
// entrypoint from the layer and runs it with args (e.g. "--help"); it
// fails unless each exits 0. It returns what it found.
func Check(dir string, args ...string) ([]Entry, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) == 0 {
		return nil, fmt.Errorf("%s: no images", dir)
	}
	var out []Entry
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		e := Entry{Ref: d.Annotations[RefAnnotation], Digest: d.Digest.String(), Entrypoint: cf.Config.Entrypoint, User: cf.Config.User}
		if len(e.Entrypoint) == 0 {
			return nil, fmt.Errorf("%s: no entrypoint", e.Ref)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			return nil, fmt.Errorf("%s: want one layer: %v", e.Ref, err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp("", "imagecheck")
		if err != nil {
			return nil, err
		}
		var loader string
		loader, err = extractAll(rc, tmp)
		rc.Close()
		if err == nil {
			// A binary that brings its loader runs under it with the
			// image's libraries only, so a missing one shows here.
			bin := filepath.Join(tmp, e.Entrypoint[0])
			cmd := exec.Command(bin, args...)
			if loader != "" {
				cmd = exec.Command(filepath.Join(tmp, loader), append([]string{"--library-path", libPath(tmp, loader), bin}, args...)...)
			}
			var o []byte
			o, err = cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%s: %s %s: %v\n%s", e.Ref, e.Entrypoint[0], strings.Join(args, " "), err, o)
			}
		}
		os.RemoveAll(tmp)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// extractAll unpacks the layer under root and returns the dynamic loader
// it carries, if any.
func extractAll(r io.Reader, root string) (string, error) {
	tr := tar.NewReader(r)
	loader := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return loader, nil
		}
		if err != nil {
			return "", err
		}
		name := filepath.Clean("/" + h.Name) // no path may leave root
		to := filepath.Join(root, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(to, 0o755); err != nil {
				return "", err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return "", err
			}
			f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
			if err != nil {
				return "", err
			}
			_, err = io.Copy(f, io.LimitReader(tr, 1<<30))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", err
			}
			if strings.HasPrefix(filepath.Base(name), "ld-linux") {
				loader = name
			}
		}
	}
}

// libPath is every directory of the unpacked layer that holds a shared library.
func libPath(root, loader string) string {
	dirs := map[string]bool{filepath.Join(root, filepath.Dir(loader)): true}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".so") {
			dirs[filepath.Dir(p)] = true
		}
		return nil
	})
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	return strings.Join(out, ":")
}
