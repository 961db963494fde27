package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/recordcri"
)

// KubeletOptions configure a real kubelet node.
type KubeletOptions struct {
	// Name is the node's name (default "kubelet-0").
	Name string
	// Labels are registered with the node (--node-labels).
	Labels map[string]string
	// Taints are registered with the node, e.g. to keep other workloads off it.
	Taints []corev1.Taint
	// Dir holds the kubelet's root, the runtime's socket and records, and
	// the pods' logs (default: kubelet-<name> in the cluster's folder).
	Dir string
	// StartTimeout bounds the wait for the node to be Ready (default 90 s).
	StartTimeout time.Duration
}

// Kubelet is a real kubelet (k8s.io/kubernetes cmd/kubelet) registered as
// a node of the cluster, running containers as records in recordcri. kwok
// leaves it alone: kwok manages only nodes annotated kwok.x-k8s.io/node.
type Kubelet struct {
	Name string
	// StateDir holds the configuration, the runtime's containers.json and
	// the pods' logs (KubeletOptions.Dir).
	StateDir string
	// RootDir is --root-dir; plugins register in RegistrarDir and keep
	// their sockets under PluginsDir, as on a real node.
	RootDir, RegistrarDir, PluginsDir string
	// Runtime is the CRI runtime the kubelet talks to.
	Runtime *recordcri.Server

	c          *Cluster
	opt        KubeletOptions
	configPath string
	logPath    string
	cmd        *exec.Cmd
	exited     chan struct{}
	ownRoot    bool
}

// maxRootDir leaves room below the root for the longest plugin socket
// path, plugins_registry/<driver>-reg.sock.
const maxRootDir = 60

// StartKubelet starts the runtime and a kubelet that registers node
// opt.Name, and waits until the node is Ready. It needs root (the kubelet
// manages cgroups and mounts). Stop it with Stop; Cluster.Stop does not.
func (c *Cluster) StartKubelet(ctx context.Context, opt KubeletOptions) (_ *Kubelet, err error) {
	if opt.Name == "" {
		opt.Name = "kubelet-0"
	}
	if opt.Dir == "" {
		opt.Dir = filepath.Join(c.Dir, "kubelet-"+opt.Name)
	}
	if opt.StartTimeout == 0 {
		opt.StartTimeout = 90 * time.Second
	}
	if err := CheckKubeletRoot(); err != nil {
		return nil, err
	}
	if err := CheckKubelet(c.binDir); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opt.Dir)
	if err != nil {
		return nil, err
	}
	k := &Kubelet{Name: opt.Name, StateDir: dir, RootDir: filepath.Join(dir, "root"), c: c, opt: opt,
		configPath: filepath.Join(dir, "kubelet.yaml"), logPath: filepath.Join(c.Dir, "logs", "kubelet-"+opt.Name+".log")}
	// Sockets live under the root: a unix socket's path is at most 107
	// bytes, so a deep state folder gets its root in a short temporary one.
	if len(k.RootDir) > maxRootDir {
		if k.RootDir, err = os.MkdirTemp("", "gpuplane-kubelet-"); err != nil {
			return nil, err
		}
		k.ownRoot = true
	}
	defer func() {
		if err != nil {
			k.Stop()
		}
	}()
	k.RegistrarDir = filepath.Join(k.RootDir, "plugins_registry")
	k.PluginsDir = filepath.Join(k.RootDir, "plugins")
	for _, d := range []string{k.RootDir, k.RegistrarDir, k.PluginsDir, filepath.Join(dir, "static-pods"), filepath.Join(dir, "pod-logs"), filepath.Dir(k.logPath)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("kubelet folder: %w", err)
		}
	}
	if k.Runtime, err = recordcri.Start(recordcri.Options{Socket: filepath.Join(k.RootDir, "cri.sock"),
		StateFile: filepath.Join(dir, "containers.json")}); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	kc := kubeletConfig(k.Runtime.Endpoint(), filepath.Join(dir, "static-pods"), filepath.Join(dir, "pod-logs"), ports[0], ports[1])
	kc.RegisterWithTaints = opt.Taints
	cfg, err := yaml.Marshal(kc)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(k.configPath, cfg, 0o644); err != nil {
		return nil, err
	}
	if err := k.start(); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opt.StartTimeout)
	defer cancel()
	if err := k.WaitReady(wctx); err != nil {
		return nil, err
	}
	return k, nil
}

// CheckKubeletRoot says whether this process may run a kubelet.
func CheckKubeletRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("a real kubelet needs root (it manages cgroups and mounts); run as root, or leave the kubelet node out")
	}
	return nil
}

// CheckKubelet says whether the kubelet binary is in dir, and how to build it.
func CheckKubelet(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "kubelet")); err != nil {
		return fmt.Errorf("kubelet binary missing in %s; build it with: bash hack/build-cluster-bins.sh (seconds after the control plane's first build)", dir)
	}
	return nil
}

// kubeletConfig is the kubelet's configuration for a machine that is not
// a dedicated node: cgroup v1 accepted (failCgroupV1 false), no per-QoS
// cgroups and no node-allocatable enforcement (the kubelet would otherwise
// create and limit cgroups for the host's own processes), swap tolerated,
// eviction and image GC off (the host's disk and memory belong to other
// work), and every port on loopback with authorization left open there.
func kubeletConfig(runtime, staticPods, podLogs string, port, healthz int) *kubeletv1beta1.KubeletConfiguration {
	off := "0%"
	return &kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Authentication: kubeletv1beta1.KubeletAuthentication{Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
			Webhook: kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)}},
		Authorization:            kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow},
		Address:                  "127.0.0.1",
		Port:                     int32(port),
		ReadOnlyPort:             0,
		HealthzBindAddress:       "127.0.0.1",
		HealthzPort:              ptr.To(int32(healthz)),
		CgroupDriver:             "cgroupfs",
		CgroupsPerQOS:            ptr.To(false),
		EnforceNodeAllocatable:   []string{"none"},
		FailSwapOn:               ptr.To(false),
		FailCgroupV1:             ptr.To(false),
		ContainerRuntimeEndpoint: runtime,
		StaticPodPath:            staticPods,
		PodLogsDir:               podLogs,
		ResolverConfig:           ptr.To(""),
		EvictionHard: map[string]string{"memory.available": off, "nodefs.available": off, "nodefs.inodesFree": off,
			"imagefs.available": off, "imagefs.inodesFree": off},
		ImageGCHighThresholdPercent:   ptr.To(int32(100)),
		ImageGCLowThresholdPercent:    ptr.To(int32(99)),
		LocalStorageCapacityIsolation: ptr.To(false),
		NodeStatusUpdateFrequency:     metav1.Duration{Duration: 2 * time.Second},
		NodeStatusReportFrequency:     metav1.Duration{Duration: 10 * time.Second},
		SyncFrequency:                 metav1.Duration{Duration: 10 * time.Second},
		FileCheckFrequency:            metav1.Duration{Duration: 5 * time.Second},
	}
}

func (k *Kubelet) start() error {
	log, err := os.OpenFile(k.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	labels := make([]string, 0, len(k.opt.Labels))
	for key, v := range k.opt.Labels {
		labels = append(labels, key+"="+v)
	}
	sort.Strings(labels)
	args := []string{"--config=" + k.configPath, "--kubeconfig=" + k.c.Kubeconfig, "--root-dir=" + k.RootDir,
		"--cert-dir=" + filepath.Join(k.RootDir, "pki"), "--hostname-override=" + k.Name, "--node-ip=127.0.0.1", "--v=2"}
	if len(labels) > 0 {
		args = append(args, "--node-labels="+strings.Join(labels, ","))
	}
	k.cmd = exec.Command(filepath.Join(k.c.binDir, "kubelet"), args...)
	k.cmd.Stdout, k.cmd.Stderr = log, log
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start kubelet: %w", err)
	}
	k.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}(k.cmd, k.exited)
	return nil
}

// WaitReady waits until the node reports Ready with no not-ready taint.
func (k *Kubelet) WaitReady(ctx context.Context) error {
	_, err := k.c.waitNodeReady(ctx, k.Name, k.exited)
	switch {
	case errors.Is(err, errAgentExited):
		return fmt.Errorf("kubelet exited (log %s):\n%s", k.logPath, k.LogTail(15))
	case err != nil:
		return fmt.Errorf("node %s not Ready (kubelet log %s): %w\n%s", k.Name, k.logPath, err, k.LogTail(15))
	}
	return nil
}

// Restart stops the kubelet process and starts it again with the same
// root folder (its checkpoints) and runtime, as after a kubelet crash or
// upgrade; the runtime's containers keep running meanwhile.
func (k *Kubelet) Restart(ctx context.Context) error {
	k.stopProcess()
	if err := k.start(); err != nil {
		return err
	}
	return k.WaitReady(ctx)
}

// Node returns the kubelet's node object.
func (k *Kubelet) Node(ctx context.Context) (*corev1.Node, error) {
	return k.c.Client.CoreV1().Nodes().Get(ctx, k.Name, metav1.GetOptions{})
}

// LogTail returns the end of the kubelet's log.
func (k *Kubelet) LogTail(lines int) string {
	return k.c.LogTail("kubelet-"+k.Name, lines)
}

// PID is the kubelet's process id.
func (k *Kubelet) PID() int {
	if k.cmd == nil || k.cmd.Process == nil {
		return 0
	}
	return k.cmd.Process.Pid
}

func (k *Kubelet) stopProcess() {
	if k.cmd == nil || k.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.exited
	}
	k.cmd = nil
}

// Stop ends the kubelet and the runtime. The node object stays, NotReady.
func (k *Kubelet) Stop() {
	k.stopProcess()
	if k.Runtime != nil {
		k.Runtime.Stop()
	}
	if k.ownRoot {
		_ = os.RemoveAll(k.RootDir)
	}
}
