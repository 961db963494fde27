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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// PodRunner plays the container runtime for kwok's pods: for each Running
// pod that Command turns into arguments of the gpuplane binary, it starts
// that process on the pod's IP and, once the pod is gone, sends it SIGTERM
// after a grace period that outlasts a router's refresh (like a preStop
// sleep); the process then drains its requests and exits.
//
// Processes belong to pods (by UID), not to IPs: kwok hands a deleted pod's
// IP to the next pod, and the new pod must get a process of its own role,
// so a process still draining on that IP is stopped first.
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

	mu       sync.Mutex
	procs    map[types.UID]*podProc // running pods' processes
	draining map[string]*podProc    // pod IP -> process of a gone pod
	evicted  map[types.UID]bool     // pods deleted for sharing a live pod's IP
	wg       sync.WaitGroup
}

// podProc is one pod's process; exited closes when it has exited.
type podProc struct {
	cmd    *exec.Cmd
	ip     string
	exited chan struct{}
}

// drainGrace is how long a gone pod's process keeps serving.
const drainGrace = 5 * time.Second

// Run polls the pods until ctx ends.
func (p *PodRunner) Run(ctx context.Context) {
	p.mu.Lock()
	if p.procs == nil {
		p.procs, p.draining, p.evicted = map[types.UID]*podProc{}, map[string]*podProc{}, map[types.UID]bool{}
	}
	p.mu.Unlock()
	for ctx.Err() == nil {
		pods, err := p.Client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			p.sync(ctx, pods.Items)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// livePod is a pod that should have a process: where and what to run.
type livePod struct {
	pod  *corev1.Pod
	args []string
	port int
}

func (p *PodRunner) sync(ctx context.Context, pods []corev1.Pod) {
	live := map[types.UID]livePod{}
	var order []types.UID
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
			continue
		}
		args, port := p.Command(pod)
		if args == nil {
			continue
		}
		live[pod.UID] = livePod{pod: pod, args: args, port: port}
		order = append(order, pod.UID)
	}
	// Gone pods first: their IPs may be the new pods'.
	p.mu.Lock()
	listed := map[types.UID]bool{}
	for i := range pods {
		listed[pods[i].UID] = true
	}
	for uid := range p.evicted {
		if !listed[uid] {
			delete(p.evicted, uid) // gone for good: nothing left to delete
		}
	}
	for uid, proc := range p.procs {
		if lp, ok := live[uid]; !ok || lp.pod.Status.PodIP != proc.ip {
			delete(p.procs, uid)
			p.draining[proc.ip] = proc
			go func() {
				select {
				case <-proc.exited:
				case <-time.After(drainGrace):
					_ = proc.cmd.Process.Signal(syscall.SIGTERM)
					<-proc.exited
				}
				p.mu.Lock()
				if p.draining[proc.ip] == proc {
					delete(p.draining, proc.ip)
				}
				p.mu.Unlock()
			}()
		}
	}
	held := map[string]types.UID{} // pod IP -> the live pod whose process serves on it
	for uid, proc := range p.procs {
		held[proc.ip] = uid
	}
	p.mu.Unlock()
	for _, uid := range order {
		p.mu.Lock()
		_, running := p.procs[uid]
		p.mu.Unlock()
		if running {
			continue
		}
		lp := live[uid]
		ip := lp.pod.Status.PodIP
		if owner, ok := held[ip]; ok && owner != uid {
			p.evictDuplicate(ctx, lp.pod, ip)
			continue
		}
		if err := p.start(uid, ip, lp.port, lp.args); err != nil {
			if p.OnError != nil {
				p.OnError(fmt.Errorf("pod %s/%s on %s: %w", lp.pod.Namespace, lp.pod.Name, ip, err))
			}
			continue
		}
		held[ip] = uid
	}
}

// evictDuplicate deletes a pod that kwok gave the IP of another live pod
// whose process already serves there. kwok's address pool has been seen to
// do so; no runtime can serve both, so the newer pod goes (once) and its
// controller makes a replacement, which gets an address of its own.
func (p *PodRunner) evictDuplicate(ctx context.Context, pod *corev1.Pod, ip string) {
	p.mu.Lock()
	done := p.evicted[pod.UID]
	p.evicted[pod.UID] = true
	p.mu.Unlock()
	if done {
		return
	}
	fmt.Fprintf(os.Stderr, "pod runner: %s/%s has IP %s of another live pod; deleting it for a replacement\n", pod.Namespace, pod.Name, ip)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := p.Client.CoreV1().Pods(pod.Namespace).Delete(dctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		p.mu.Lock()
		delete(p.evicted, pod.UID) // try again on the next poll
		p.mu.Unlock()
		if p.OnError != nil {
			p.OnError(fmt.Errorf("pod %s/%s shares IP %s with a live pod, and deleting it failed: %w", pod.Namespace, pod.Name, ip, err))
		}
	}
}

// stopDraining ends the drain of a gone pod's process on ip, if any, and
// waits for it to exit so that the IP is free.
func (p *PodRunner) stopDraining(ip string) {
	p.mu.Lock()
	old := p.draining[ip]
	delete(p.draining, ip)
	p.mu.Unlock()
	if old == nil {
		return
	}
	_ = old.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-old.exited:
	case <-time.After(drainGrace):
		_ = old.cmd.Process.Kill()
		<-old.exited
	}
}

func (p *PodRunner) start(uid types.UID, ip string, port int, args []string) error {
	p.stopDraining(ip)
	cmd := exec.Command(p.Bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	proc := &podProc{cmd: cmd, ip: ip, exited: make(chan struct{})}
	p.wg.Go(func() { _ = cmd.Wait(); close(proc.exited) })
	// Started when it answers /health (any status: a router with no workers yet says 503).
	url := fmt.Sprintf("http://%s:%d/health", ip, port)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-proc.exited:
			return fmt.Errorf("exited before answering %s: %v", url, cmd.ProcessState)
		default:
		}
		if r, err := http.Get(url); err == nil {
			r.Body.Close()
			p.mu.Lock()
			p.procs[uid] = proc
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
		_ = c.cmd.Process.Kill()
	}
	for _, c := range p.draining {
		_ = c.cmd.Process.Kill()
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
