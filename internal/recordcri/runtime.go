package recordcri

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeName is what the kubelet shows as the node's container runtime.
const RuntimeName = "gpuplane-recordcri"

// Version names the runtime and the CRI version it speaks.
func (s *Server) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: RuntimeName, RuntimeVersion: "0.1.0", RuntimeApiVersion: "v1"}, nil
}

// Status reports the runtime and its network ready: records need neither.
func (s *Server) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}}, nil
}

// RuntimeConfig tells the kubelet the cgroup driver (cgroupfs, as its config).
func (s *Server) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS}}, nil
}

// UpdateRuntimeConfig accepts the pod CIDR; sandbox addresses are the runtime's own.
func (s *Server) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// RunPodSandbox records a ready sandbox with an address of its own.
func (s *Server) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md == nil || md.Name == "" || md.Namespace == "" || md.Uid == "" {
		return nil, status.Error(codes.InvalidArgument, "config.metadata: name, namespace and uid are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextIP++
	sb := &Sandbox{ID: newID(), Pod: md.Name, Namespace: md.Namespace, PodUID: md.Uid, Attempt: md.Attempt,
		IP:    fmt.Sprintf("10.88.%d.%d", s.nextIP/250%250, s.nextIP%250+2),
		State: stateReady, CreatedAt: s.opt.Now().UnixNano(), labels: copyMap(cfg.Labels), annotations: copyMap(cfg.Annotations),
		logDir: cfg.LogDirectory, hostNetwork: cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE}
	if sb.hostNetwork {
		sb.IP = ""
	}
	s.sandboxes[sb.ID] = sb
	s.changed()
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.ID}, nil
}

// StopPodSandbox stops the sandbox and its containers.
func (s *Server) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.liveSandbox(req.PodSandboxId)
	if err != nil {
		return &runtimeapi.StopPodSandboxResponse{}, nil // stopping a gone sandbox is not an error
	}
	sb.State = stateNotReady
	for _, c := range s.containers {
		if c.SandboxID == sb.ID {
			s.exit(c)
		}
	}
	s.changed()
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes the sandbox and its containers from the lists.
func (s *Server) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.PodSandboxId]
	if !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	sb.Removed, sb.State = true, stateNotReady
	for _, c := range s.containers {
		if c.SandboxID == sb.ID {
			s.remove(c)
		}
	}
	s.changed()
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus reports a sandbox; a removed one is NotFound, as the
// kubelet expects of a real runtime.
func (s *Server) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.liveSandbox(req.PodSandboxId)
	if err != nil {
		return nil, err
	}
	st := &runtimeapi.PodSandboxStatus{Id: sb.ID, Metadata: sandboxMeta(sb), State: sandboxState(sb.State), CreatedAt: sb.CreatedAt,
		Labels: copyMap(sb.labels), Annotations: copyMap(sb.annotations)}
	if sb.IP != "" {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: sb.IP}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

// ListPodSandbox lists the sandboxes that are not removed and match the filter.
func (s *Server) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := req.GetFilter()
	var out []*runtimeapi.PodSandbox
	for _, sb := range s.sandboxes {
		if sb.Removed || f.GetId() != "" && f.GetId() != sb.ID ||
			f.GetState() != nil && f.GetState().State != sandboxState(sb.State) || !matches(sb.labels, f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: sb.ID, Metadata: sandboxMeta(sb), State: sandboxState(sb.State),
			CreatedAt: sb.CreatedAt, Labels: copyMap(sb.labels), Annotations: copyMap(sb.annotations)})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

// CreateContainer records the container with its CDI devices, mounts,
// devices and environment, and writes its log file.
func (s *Server) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	if cfg.GetMetadata().GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "config.metadata.name is required")
	}
	if lp := cfg.LogPath; lp != "" && (filepath.IsAbs(lp) || !filepath.IsLocal(lp)) {
		return nil, status.Errorf(codes.InvalidArgument, "config.log_path %q: must be a path inside the sandbox's log directory", lp)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.liveSandbox(req.PodSandboxId)
	if err != nil {
		return nil, err
	}
	if sb.State != stateReady {
		return nil, status.Errorf(codes.FailedPrecondition, "pod sandbox %q is not ready", req.PodSandboxId)
	}
	c := &Container{ID: newID(), SandboxID: sb.ID, Name: cfg.Metadata.Name, Attempt: cfg.Metadata.Attempt,
		Pod: sb.Pod, Namespace: sb.Namespace, PodUID: sb.PodUID, Image: s.imageName(cfg.GetImage()),
		State: stateCreated, CreatedAt: s.opt.Now().UnixNano(), labels: copyMap(cfg.Labels), annotations: copyMap(cfg.Annotations),
		image: cfg.Image, Env: map[string]string{}}
	for _, d := range cfg.CDIDevices {
		c.CDIDevices = append(c.CDIDevices, d.GetName())
	}
	for _, d := range cfg.Devices {
		c.Devices = append(c.Devices, d.GetHostPath())
	}
	for _, m := range cfg.Mounts {
		c.Mounts = append(c.Mounts, Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, ReadOnly: m.Readonly})
	}
	for _, kv := range cfg.Envs {
		c.Env[kv.Key] = string(kv.Value)
	}
	if sb.logDir != "" && cfg.LogPath != "" {
		c.logPath = filepath.Join(sb.logDir, cfg.LogPath)
		if err := writeLog(c.logPath, s.opt.Now().UTC().Format("2006-01-02T15:04:05.000000000Z07:00"), c); err != nil {
			return nil, status.Errorf(codes.Internal, "container log: %v", err)
		}
	}
	s.containers[c.ID] = c
	s.changed()
	return &runtimeapi.CreateContainerResponse{ContainerId: c.ID}, nil
}

// writeLog writes what the container received in the CRI log format, so
// `kubectl logs` shows it.
func writeLog(path, ts string, c *Container) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lines := []string{fmt.Sprintf("recordcri: container %s of pod %s/%s (image %s)", c.Name, c.Namespace, c.Pod, c.Image),
		"recordcri: CDI devices: " + strings.Join(c.CDIDevices, " ")}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s stdout F %s\n", ts, l)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// StartContainer marks a created container running.
func (s *Server) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.liveContainer(req.ContainerId)
	if err != nil {
		return nil, err
	}
	if c.State != stateCreated {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is %s, not created", req.ContainerId, c.State)
	}
	c.State, c.StartedAt = stateRunning, s.opt.Now().UnixNano()
	s.changed()
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer stops a container; stopping a stopped or gone one succeeds.
func (s *Server) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.containers[req.ContainerId]; ok && c.State != stateExited {
		s.exit(c)
		s.changed()
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// exit ends a container as if its process left on SIGTERM; mu held.
func (s *Server) exit(c *Container) {
	if c.State != stateExited {
		c.State, c.FinishedAt = stateExited, s.opt.Now().UnixNano()
	}
}

// remove ends a container and takes it off the lists; mu held.
func (s *Server) remove(c *Container) {
	s.exit(c)
	c.Removed = true
}

// liveSandbox and liveContainer find what the lists still show; mu held.
func (s *Server) liveSandbox(id string) (*Sandbox, error) {
	if sb, ok := s.sandboxes[id]; ok && !sb.Removed {
		return sb, nil
	}
	return nil, status.Errorf(codes.NotFound, "pod sandbox %q not found", id)
}

func (s *Server) liveContainer(id string) (*Container, error) {
	if c, ok := s.containers[id]; ok && !c.Removed {
		return c, nil
	}
	return nil, status.Errorf(codes.NotFound, "container %q not found", id)
}

// RemoveContainer removes a container from the lists (idempotent).
func (s *Server) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, err := s.liveContainer(req.ContainerId); err == nil {
		s.remove(c)
		s.changed()
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ListContainers lists the containers that are not removed and match the filter.
func (s *Server) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := req.GetFilter()
	var out []*runtimeapi.Container
	for _, c := range s.containers {
		if c.Removed || f.GetId() != "" && f.GetId() != c.ID || f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.SandboxID ||
			f.GetState() != nil && f.GetState().State != containerState(c.State) || !matches(c.labels, f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: c.ID, PodSandboxId: c.SandboxID, Metadata: containerMeta(c),
			Image: c.image, ImageRef: imageRef(c.Image), ImageId: imageRef(c.Image), State: containerState(c.State), CreatedAt: c.CreatedAt,
			Labels: copyMap(c.labels), Annotations: copyMap(c.annotations)})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// ContainerStatus reports a container; a removed one is NotFound.
func (s *Server) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.liveContainer(req.ContainerId)
	if err != nil {
		return nil, err
	}
	st := &runtimeapi.ContainerStatus{Id: c.ID, Metadata: containerMeta(c), State: containerState(c.State),
		CreatedAt: c.CreatedAt, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt, Image: c.image,
		ImageRef: imageRef(c.Image), ImageId: imageRef(c.Image), Labels: copyMap(c.labels), Annotations: copyMap(c.annotations), LogPath: c.logPath}
	if c.State == stateExited {
		st.Reason = "Completed"
	}
	for _, m := range c.Mounts {
		st.Mounts = append(st.Mounts, &runtimeapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.ReadOnly})
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// UpdateContainerResources accepts new limits; records have no cgroups.
func (s *Server) UpdateContainerResources(context.Context, *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ReopenContainerLog has nothing to reopen: logs are written once.
func (s *Server) ReopenContainerLog(context.Context, *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// ListContainerStats, ListPodSandboxStats and the metrics calls answer
// empty: records use no CPU or memory.
func (s *Server) ListContainerStats(context.Context, *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	return &runtimeapi.ListContainerStatsResponse{}, nil
}

// ListPodSandboxStats answers empty (see ListContainerStats).
func (s *Server) ListPodSandboxStats(context.Context, *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	return &runtimeapi.ListPodSandboxStatsResponse{}, nil
}

// ListMetricDescriptors answers empty (see ListContainerStats).
func (s *Server) ListMetricDescriptors(context.Context, *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return &runtimeapi.ListMetricDescriptorsResponse{}, nil
}

// ListPodSandboxMetrics answers empty (see ListContainerStats).
func (s *Server) ListPodSandboxMetrics(context.Context, *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	return &runtimeapi.ListPodSandboxMetricsResponse{}, nil
}

func sandboxMeta(sb *Sandbox) *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: sb.Pod, Namespace: sb.Namespace, Uid: sb.PodUID, Attempt: sb.Attempt}
}

func containerMeta(c *Container) *runtimeapi.ContainerMetadata {
	return &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: c.Attempt}
}
