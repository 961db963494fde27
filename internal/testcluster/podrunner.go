package testcluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodRunner plays the container runtime for kwok's pods: for each Running
// pod that Command turns into arguments of the gpuplane binary, it starts
// that process on the pod's IP and, once the pod is gone, sends it SIGTERM
// after a grace period that outlasts a router's refresh (like a preStop
// sleep); the process then drains its requests and exits.
type PodRunner struct {
	Client kubernetes.Interface
	// Namespace limits the pods run ("": all).
	Namespace string
	Bin       string
	// Command is the pod's process (nil: the pod is not run) and the port
	// it answers /health on.
	Command func(pod *corev1.Pod) ([]string, int)
	// OnError receives start failures.
	OnError func(error)

	mu    sync.Mutex
	procs map[string]*exec.Cmd // pod IP -> process
	wg    sync.WaitGroup
}

// Run polls the pods until ctx ends.
func (p *PodRunner) Run(ctx context.Context) {
	p.mu.Lock()
	if p.procs == nil {
		p.procs = map[string]*exec.Cmd{}
	}
	p.mu.Unlock()
	for ctx.Err() == nil {
		pods, err := p.Client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			p.sync(pods.Items)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *PodRunner) sync(pods []corev1.Pod) {
	live := map[string]bool{}
	for i := range pods {
		pod := &pods[i]
		ip := pod.Status.PodIP
		if pod.Status.Phase != corev1.PodRunning || ip == "" || pod.DeletionTimestamp != nil {
			continue
		}
		args, port := p.Command(pod)
		if args == nil {
			continue
		}
		live[ip] = true
		p.mu.Lock()
		_, running := p.procs[ip]
		p.mu.Unlock()
		if !running {
			if err := p.start(ip, port, args); err != nil && p.OnError != nil {
				p.OnError(fmt.Errorf("pod %s/%s on %s: %w", pod.Namespace, pod.Name, ip, err))
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for ip, cmd := range p.procs {
		if !live[ip] {
			delete(p.procs, ip)
			go func() {
				time.Sleep(5 * time.Second)
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}()
		}
	}
}

func (p *PodRunner) start(ip string, port int, args []string) error {
	cmd := exec.Command(p.Bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	p.wg.Go(func() { _ = cmd.Wait() })
	// Started when it answers /health (any status: a router with no workers yet says 503).
	url := fmt.Sprintf("http://%s:%d/health", ip, port)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get(url); err == nil {
			r.Body.Close()
			p.mu.Lock()
			p.procs[ip] = cmd
			p.mu.Unlock()
			return nil
		}
	}
	_ = cmd.Process.Kill()
	return fmt.Errorf("%s did not answer", url)
}

// Stop kills every process and waits for them.
func (p *PodRunner) Stop() {
	p.mu.Lock()
	for _, c := range p.procs {
		_ = c.Process.Kill()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// GPUPlanePods runs the pods of gpuplane's image as a kubelet would: the
// container's command and arguments (the image's entrypoint is gpuplane),
// with the pod's IP for 0.0.0.0 and the downward-API namespace expanded;
// the router reaches the API server through kubeconfig.
func GPUPlanePods(kubeconfig string) func(pod *corev1.Pod) ([]string, int) {
	return func(pod *corev1.Pod) ([]string, int) {
		c := pod.Spec.Containers[0]
		if !strings.Contains(c.Image, "gpuplane/gpuplane:") || len(c.Ports) == 0 {
			return nil, 0
		}
		args := append(append([]string{}, c.Command...), c.Args...)
		if len(args) > 0 && args[0] == "gpuplane" {
			args = args[1:]
		}
		if len(args) == 0 {
			return nil, 0
		}
		r := strings.NewReplacer("0.0.0.0", pod.Status.PodIP, "$(POD_NAMESPACE)", pod.Namespace)
		for i, a := range args {
			args[i] = r.Replace(a)
		}
		if args[0] == "frontend" {
			args = append(args, "--kubeconfig", kubeconfig)
		}
		return args, int(c.Ports[0].ContainerPort)
	}
}
