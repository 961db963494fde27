// Package recordcri is a container runtime for a real kubelet on a machine
// with no container engine: it serves the CRI (runtime and image services,
// k8s.io/cri-api) over a unix socket, "runs" pod sandboxes and containers
// as records, and keeps what each container was created with (CDI devices,
// mounts, environment, Linux devices) for tests and people to inspect.
package recordcri

import (
	"sort"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Mount is a bind mount the kubelet asked for.
type Mount struct {
	ContainerPath string `json:"containerPath"`
	HostPath      string `json:"hostPath"`
	ReadOnly      bool   `json:"readOnly,omitempty"`
}

// Container is one container as the kubelet created it.
type Container struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandboxID"`
	Name      string `json:"name"`
	Attempt   uint32 `json:"attempt"`
	// Pod, Namespace and PodUID come from the sandbox's metadata.
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	PodUID    string `json:"podUID"`
	Image     string `json:"image"`
	// CDIDevices are the fully qualified CDI device names (vendor/class=name)
	// the kubelet passed, in its order: the DRA drivers' devices.
	CDIDevices []string          `json:"cdiDevices,omitempty"`
	Devices    []string          `json:"devices,omitempty"` // host paths of Linux devices
	Env        map[string]string `json:"env,omitempty"`
	Mounts     []Mount           `json:"mounts,omitempty"`
	State      string            `json:"state"` // created, running, exited
	CreatedAt  int64             `json:"createdAt"`
	StartedAt  int64             `json:"startedAt,omitempty"`
	FinishedAt int64             `json:"finishedAt,omitempty"`
	Removed    bool              `json:"removed,omitempty"`

	labels, annotations map[string]string
	logPath             string
	image               *runtimeapi.ImageSpec
}

// Sandbox is one pod sandbox.
type Sandbox struct {
	ID        string `json:"id"`
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	PodUID    string `json:"podUID"`
	Attempt   uint32 `json:"attempt"`
	IP        string `json:"ip"`
	State     string `json:"state"` // ready, notready
	CreatedAt int64  `json:"createdAt"`
	Removed   bool   `json:"removed,omitempty"`

	labels, annotations map[string]string
	logDir              string
	hostNetwork         bool
}

// Records is everything the runtime was asked to run, removed objects
// included (marked Removed), so a test can see what a deleted pod had.
type Records struct {
	Sandboxes  []Sandbox   `json:"sandboxes"`
	Containers []Container `json:"containers"`
}

// ContainersOf returns the containers of a pod (namespace/name), newest
// last, removed ones included.
func (r Records) ContainersOf(namespace, pod string) []Container {
	var out []Container
	for _, c := range r.Containers {
		if c.Namespace == namespace && c.Pod == pod {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out
}

func containerState(s string) runtimeapi.ContainerState {
	switch s {
	case stateCreated:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case stateRunning:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case stateExited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

func sandboxState(s string) runtimeapi.PodSandboxState {
	if s == stateReady {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

const (
	stateCreated  = "created"
	stateRunning  = "running"
	stateExited   = "exited"
	stateReady    = "ready"
	stateNotReady = "notready"
)

// matches says whether labels carry every key/value of selector.
func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
