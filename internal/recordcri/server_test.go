package recordcri

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// start serves a runtime in a temporary folder and connects to it as the
// kubelet does, over the unix socket.
func start(t *testing.T) (*Server, runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := Start(Options{Socket: filepath.Join(dir, "cri.sock"), StateFile: filepath.Join(dir, "state.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return s, runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn), dir
}

func sandbox(ctx context.Context, t *testing.T, rt runtimeapi.RuntimeServiceClient, name, logDir string) string {
	t.Helper()
	r, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Labels:   map[string]string{"io.kubernetes.pod.name": name}, LogDirectory: logDir}})
	if err != nil {
		t.Fatal(err)
	}
	return r.PodSandboxId
}

func container(ctx context.Context, t *testing.T, rt runtimeapi.RuntimeServiceClient, sb, name string, cdi ...string) string {
	t.Helper()
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:  &runtimeapi.ImageSpec{Image: imageRef("vllm/vllm-openai:v0.11.0"), UserSpecifiedImage: "vllm/vllm-openai:v0.11.0"},
		Envs:   []*runtimeapi.KeyValue{{Key: "MODEL", Value: []byte("Qwen/Qwen3-32B-FP8")}},
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/models", HostPath: "/var/cache/models", Readonly: true}},
		Labels: map[string]string{"io.kubernetes.container.name": name}, LogPath: name + "/0.log"}
	for _, c := range cdi {
		cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: c})
	}
	r, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return r.ContainerId
}

func TestLifecycleRecordsWhatTheContainerGot(t *testing.T) {
	ctx := context.Background()
	s, rt, _, dir := start(t)
	v, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil || v.RuntimeName != RuntimeName || v.RuntimeApiVersion != "v1" {
		t.Fatalf("version %+v %v", v, err)
	}
	logDir := filepath.Join(dir, "logs")
	sb := sandbox(ctx, t, rt, "pod-a", logDir)
	id := container(ctx, t, rt, sb, "main", "k8s.gpu.gpuplane.io/claim=uid-gpu-0")
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.Status.StartedAt == 0 {
		t.Fatalf("status %+v %v", st, err)
	}
	c := s.Records().ContainersOf("default", "pod-a")
	if len(c) != 1 {
		t.Fatalf("records %+v", c)
	}
	got := c[0]
	if got.Image != "vllm/vllm-openai:v0.11.0" || got.Env["MODEL"] != "Qwen/Qwen3-32B-FP8" ||
		len(got.CDIDevices) != 1 || got.CDIDevices[0] != "k8s.gpu.gpuplane.io/claim=uid-gpu-0" ||
		len(got.Mounts) != 1 || !got.Mounts[0].ReadOnly || got.State != stateRunning {
		t.Errorf("record %+v", got)
	}
	log, err := os.ReadFile(filepath.Join(logDir, "main", "0.log"))
	if err != nil || !strings.Contains(string(log), " stdout F recordcri: CDI devices: k8s.gpu.gpuplane.io/claim=uid-gpu-0") {
		t.Errorf("log %q %v", log, err)
	}
	var file Records
	b, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	if err := json.Unmarshal(b, &file); err != nil || len(file.Containers) != 1 || file.Containers[0].State != stateRunning {
		t.Errorf("state file %s: %v", b, err)
	}

	// Stop and remove: the status is gone, the record stays, marked removed.
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	st, _ = rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.FinishedAt == 0 {
		t.Errorf("after stopping the sandbox: %+v", st.Status)
	}
	for i := 0; i < 2; i++ { // removing twice succeeds
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("status of a removed container: %v, want NotFound", err)
	}
	if _, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb}); status.Code(err) != codes.NotFound {
		t.Errorf("status of a removed sandbox: %v, want NotFound", err)
	}
	if r := s.Records(); len(r.Containers) != 1 || !r.Containers[0].Removed || !r.Sandboxes[0].Removed {
		t.Errorf("records after removal %+v", r)
	}
}

func TestListFilters(t *testing.T) {
	ctx := context.Background()
	_, rt, _, _ := start(t)
	a := sandbox(ctx, t, rt, "a", "")
	b := sandbox(ctx, t, rt, "b", "")
	a1 := container(ctx, t, rt, a, "one")
	a2 := container(ctx, t, rt, a, "two")
	b1 := container(ctx, t, rt, b, "one")
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: a1}); err != nil {
		t.Fatal(err)
	}
	running := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	for _, tc := range []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all", nil, []string{a1, a2, b1}},
		{"by id", &runtimeapi.ContainerFilter{Id: a2}, []string{a2}},
		{"by sandbox", &runtimeapi.ContainerFilter{PodSandboxId: b}, []string{b1}},
		{"by state", &runtimeapi.ContainerFilter{State: running}, []string{a1}},
		{"by label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "one"}}, []string{a1, b1}},
		{"label and sandbox", &runtimeapi.ContainerFilter{PodSandboxId: a, LabelSelector: map[string]string{"io.kubernetes.container.name": "one"}}, []string{a1}},
		{"no match", &runtimeapi.ContainerFilter{Id: "nope"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, c := range r.Containers {
				got[c.Id] = true
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d containers, want %d", len(got), len(tc.want))
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("missing %s", w)
				}
			}
		})
	}
	notReady := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: b}); err != nil {
		t.Fatal(err)
	}
	r, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{State: notReady}})
	if err != nil || len(r.Items) != 1 || r.Items[0].Id != b {
		t.Errorf("not-ready sandboxes %+v %v", r, err)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	_, rt, _, _ := start(t)
	sb := sandbox(ctx, t, rt, "a", "")
	id := container(ctx, t, rt, sb, "main")
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"sandbox without metadata", func() error {
			_, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}})
			return err
		}, codes.InvalidArgument},
		{"container in an unknown sandbox", func() error {
			_, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "nope",
				Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "x"}}})
			return err
		}, codes.NotFound},
		{"container without a name", func() error {
			_, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{}})
			return err
		}, codes.InvalidArgument},
		{"log path outside the sandbox's logs", func() error {
			_, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb,
				Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, LogPath: "../../etc/x.log"}})
			return err
		}, codes.InvalidArgument},
		{"start an unknown container", func() error {
			_, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "nope"})
			return err
		}, codes.NotFound},
		{"start twice", func() error {
			if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
				return err
			}
			_, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
			return err
		}, codes.FailedPrecondition},
		{"not implemented", func() error {
			_, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id})
			return err
		}, codes.Unimplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.code {
				t.Errorf("got %v, want %s", err, tc.code)
			}
		})
	}
}

func TestImages(t *testing.T) {
	ctx := context.Background()
	_, _, img, _ := start(t)
	spec := &runtimeapi.ImageSpec{Image: "vllm/vllm-openai:v0.11.0"}
	if st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec}); err != nil || st.Image != nil {
		t.Fatalf("status before pull %+v %v", st, err)
	}
	p, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec})
	if err != nil || p.ImageRef != imageRef(spec.Image) {
		t.Fatalf("pull %+v %v", p, err)
	}
	for _, ref := range []string{spec.Image, p.ImageRef} {
		st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil || st.Image == nil || st.Image.Id != p.ImageRef {
			t.Errorf("status of %s: %+v %v", ref, st, err)
		}
	}
	fs, err := img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || fs.ImageFilesystems[0].UsedBytes.Value != imageSize {
		t.Errorf("fs info %+v %v", fs, err)
	}
	if _, err := img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: p.ImageRef}}); err != nil {
		t.Fatal(err)
	}
	if l, _ := img.ListImages(ctx, &runtimeapi.ListImagesRequest{}); len(l.Images) != 0 {
		t.Errorf("images after removal %+v", l.Images)
	}
}

// TestConcurrentPods runs many pods' calls at once, as the kubelet's pod
// workers do (meaningful under -race).
func TestConcurrentPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, rt, _, _ := start(t)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := "pod-" + string(rune('a'+i))
			sb := sandbox(ctx, t, rt, name, "")
			id := container(ctx, t, rt, sb, "main")
			if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
				t.Error(err)
			}
			_, _ = rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
			_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb})
		}(i)
	}
	wg.Wait()
	r := s.Records()
	if len(r.Sandboxes) != 16 || len(r.Containers) != 16 {
		t.Errorf("%d sandboxes, %d containers", len(r.Sandboxes), len(r.Containers))
	}
	if err := s.Err(); err != nil {
		t.Error(err)
	}
}

func TestStartNeedsSocket(t *testing.T) {
	if _, err := Start(Options{}); err == nil || !strings.Contains(err.Error(), "Socket") {
		t.Errorf("got %v", err)
	}
}
