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
		bin := filepath.Join(tmp, "entrypoint")
		err = extract(rc, strings.TrimPrefix(e.Entrypoint[0], "/"), bin)
		rc.Close()
		if err == nil {
			var o []byte
			o, err = exec.Command(bin, args...).CombinedOutput()
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

func extract(r io.Reader, name, to string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s is not in the layer", name)
		}
		if err != nil {
			return err
		}
		if h.Name != name {
			continue
		}
		f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(tr, 1<<30))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
}
