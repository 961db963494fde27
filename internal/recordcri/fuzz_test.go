package recordcri

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FuzzRequests decodes arbitrary bytes as the kubelet's sandbox and
// container requests, as gRPC would, and runs them: no request may panic.
func FuzzRequests(f *testing.F) {
	sb, _ := proto.Marshal(&runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "default", Uid: "u"}, LogDirectory: "logs"}})
	ct, _ := proto.Marshal(&runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
		CDIDevices: []*runtimeapi.CDIDevice{{Name: "k8s.gpu.gpuplane.io/claim=x"}}, LogPath: "main/0.log"})
	f.Add(sb, ct)
	f.Add([]byte{}, []byte{0xff})
	dir, err := os.MkdirTemp("", "crifuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{opt: Options{Socket: filepath.Join(dir, "x.sock"), Now: time.Now}, sandboxes: map[string]*Sandbox{},
		containers: map[string]*Container{}, images: map[string]*runtimeapi.Image{}}
	f.Fuzz(func(t *testing.T, sandboxReq, containerCfg []byte) {
		ctx := context.Background()
		var req runtimeapi.RunPodSandboxRequest
		if proto.Unmarshal(sandboxReq, &req) != nil {
			return
		}
		if req.Config != nil && req.Config.LogDirectory != "" {
			// Logs go under the test's folder only.
			req.Config.LogDirectory = filepath.Join(dir, "logs")
		}
		r, err := s.RunPodSandbox(ctx, &req)
		if err != nil {
			return
		}
		var cfg runtimeapi.ContainerConfig
		if proto.Unmarshal(containerCfg, &cfg) != nil {
			return
		}
		c, err := s.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: r.PodSandboxId, Config: &cfg})
		if err == nil {
			_, _ = s.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
			_, _ = s.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
		}
		_, _ = s.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: r.PodSandboxId})
	})
}
