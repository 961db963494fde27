package recordcri

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gpuplane/gpuplane/internal/atomicfile"
)

// Options configure a runtime.
type Options struct {
	// Socket is the unix socket to serve on (required); the kubelet's
	// containerRuntimeEndpoint is unix://Socket.
	Socket string
	// StateFile, when set, receives the records as JSON after every change,
	// for a person to read while the kubelet runs.
	StateFile string
	// ImageFSDir is reported as the image filesystem (default: Socket's folder).
	ImageFSDir string
	// Now stamps records (default time.Now).
	Now func() time.Time
}

// Server is a running runtime.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	opt  Options
	grpc *grpc.Server
	ln   net.Listener

	mu         sync.Mutex
	sandboxes  map[string]*Sandbox
	containers map[string]*Container
	images     map[string]*runtimeapi.Image
	nextIP     int
	writeErr   error
}

// Start listens on opt.Socket and serves until Stop.
func Start(opt Options) (*Server, error) {
	if opt.Socket == "" {
		return nil, errors.New("recordcri: Options.Socket is required (the kubelet's containerRuntimeEndpoint)")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.ImageFSDir == "" {
		opt.ImageFSDir = filepath.Dir(opt.Socket)
	}
	if err := os.MkdirAll(filepath.Dir(opt.Socket), 0o755); err != nil {
		return nil, fmt.Errorf("recordcri: socket folder: %w", err)
	}
	// A socket left by a previous run would make Listen fail.
	if err := os.Remove(opt.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("recordcri: remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", opt.Socket)
	if err != nil {
		return nil, fmt.Errorf("recordcri: listen on %s: %w", opt.Socket, err)
	}
	s := &Server{opt: opt, ln: ln, grpc: grpc.NewServer(grpc.MaxRecvMsgSize(16 << 20)),
		sandboxes: map[string]*Sandbox{}, containers: map[string]*Container{}, images: map[string]*runtimeapi.Image{}}
	runtimeapi.RegisterRuntimeServiceServer(s.grpc, s)
	runtimeapi.RegisterImageServiceServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(ln) }()
	return s, nil
}

// Endpoint is the kubelet's containerRuntimeEndpoint for this runtime.
func (s *Server) Endpoint() string { return "unix://" + s.opt.Socket }

// Stop ends the gRPC service; the records stay readable.
func (s *Server) Stop() {
	s.grpc.Stop()
	_ = os.Remove(s.opt.Socket)
}

// Records returns a copy of every sandbox and container, oldest first.
func (s *Server) Records() Records {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot()
}

// Err reports the last failure to write the state file.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeErr
}

func (s *Server) snapshot() Records {
	var r Records
	for _, sb := range s.sandboxes {
		c := *sb
		r.Sandboxes = append(r.Sandboxes, c)
	}
	for _, ct := range s.containers {
		c := *ct
		c.CDIDevices = append([]string(nil), ct.CDIDevices...)
		c.Devices = append([]string(nil), ct.Devices...)
		c.Mounts = append([]Mount(nil), ct.Mounts...)
		c.Env = copyMap(ct.Env)
		r.Containers = append(r.Containers, c)
	}
	sort.Slice(r.Sandboxes, func(i, j int) bool {
		return r.Sandboxes[i].CreatedAt < r.Sandboxes[j].CreatedAt ||
			r.Sandboxes[i].CreatedAt == r.Sandboxes[j].CreatedAt && r.Sandboxes[i].ID < r.Sandboxes[j].ID
	})
	sort.Slice(r.Containers, func(i, j int) bool {
		return r.Containers[i].CreatedAt < r.Containers[j].CreatedAt ||
			r.Containers[i].CreatedAt == r.Containers[j].CreatedAt && r.Containers[i].ID < r.Containers[j].ID
	})
	return r
}

// changed writes the state file; called with mu held.
func (s *Server) changed() {
	if s.opt.StateFile == "" {
		return
	}
	b, err := json.MarshalIndent(s.snapshot(), "", "  ")
	if err == nil {
		err = atomicfile.Replace(s.opt.StateFile, b, 0o644)
	}
	if err != nil {
		s.writeErr = fmt.Errorf("recordcri: state file: %w", err)
	}
}

func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
