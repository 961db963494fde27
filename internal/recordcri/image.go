package recordcri

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageSize is what a pulled record image is said to weigh: not zero, so
// the kubelet's image accounting sees something.
const imageSize = 1 << 20

// imageRef is a stable digest-like ID for an image name.
func imageRef(name string) string {
	h := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(h[:])
}

// PullImage records the image as present; nothing is downloaded.
func (s *Server) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	name := req.GetImage().GetImage()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images[name] = &runtimeapi.Image{Id: imageRef(name), RepoTags: []string{name}, Size: imageSize, Spec: req.Image}
	return &runtimeapi.PullImageResponse{ImageRef: imageRef(name)}, nil
}

// ImageStatus reports a pulled image; an unknown one has no status (the
// kubelet then pulls it).
func (s *Server) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if img := s.findImage(req.GetImage().GetImage()); img != nil {
		return &runtimeapi.ImageStatusResponse{Image: img}, nil
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

// findImage looks an image up by name or by ID; mu held.
func (s *Server) findImage(ref string) *runtimeapi.Image {
	if img, ok := s.images[ref]; ok {
		return img
	}
	for _, img := range s.images {
		if img.Id == ref {
			return img
		}
	}
	return nil
}

// ListImages lists the pulled images.
func (s *Server) ListImages(context.Context, *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*runtimeapi.Image, 0, len(s.images))
	for _, img := range s.images {
		out = append(out, img)
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// RemoveImage forgets an image (idempotent).
func (s *Server) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if img := s.findImage(req.GetImage().GetImage()); img != nil {
		delete(s.images, img.RepoTags[0])
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the image folder with the pulled images' sizes.
func (s *Server) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	used := uint64(len(s.images)) * imageSize
	fs := &runtimeapi.FilesystemUsage{Timestamp: s.opt.Now().UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: s.opt.ImageFSDir},
		UsedBytes: &runtimeapi.UInt64Value{Value: used}, InodesUsed: &runtimeapi.UInt64Value{Value: uint64(len(s.images))}}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}, ContainerFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}

// imageName is the image as the pod spec named it: the kubelet passes the
// pulled image's ID and, since CRI v1.31, the name the user gave. mu held.
func (s *Server) imageName(spec *runtimeapi.ImageSpec) string {
	if n := spec.GetUserSpecifiedImage(); n != "" {
		return n
	}
	if img := s.findImage(spec.GetImage()); img != nil && len(img.RepoTags) > 0 {
		return img.RepoTags[0]
	}
	return spec.GetImage()
}
