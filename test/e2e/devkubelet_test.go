//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/recordcri"
)

// `dev cluster up --kubelet` as a person uses it: the printed script runs
// the driver on the kubelet's node, a pod with a GPU claim starts there,
// and the runtime's record file shows the CDI device it got.
func TestDevClusterKubelet(t *testing.T) {
	dir, err := os.MkdirTemp("", "dk") // short: the kubelet's sockets live below it
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var out, errb syncBuffer
	kubeconfig, stop := devClusterUp(t, &out, &errb, "--dir", dir, "--kubelet")
	defer stop()
	m := regexp.MustCompile(`bash (\S+run-dra-driver.sh)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no driver script in:\n%s", out.String())
	}
	script := m[1]
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(rc)

	drv := exec.Command("bash", script, "--profile", "hgx-h100")
	drv.Env = append(os.Environ(), "GPUPLANE_DRA_DRIVER="+buildDriver(t))
	var drvOut syncBuffer
	drv.Stdout, drv.Stderr = &drvOut, &drvOut
	drv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := drv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-drv.Process.Pid, syscall.SIGTERM)
		_ = drv.Wait()
	}()

	tctx, tcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer tcancel()
	if _, err := client.ResourceV1().ResourceClaims("default").Create(tctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "try"}, Spec: exactly("gpu.gpuplane.io", "", 1, nil)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(tctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "try"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": "kubelet-0"}, AutomountServiceAccountToken: ptr.To(false),
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("try")}},
			Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai:v0.11.0",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := client.CoreV1().Pods("default").Get(tctx, "try", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		select {
		case <-tctx.Done():
			t.Fatalf("pod not running: %+v\ndriver:\n%s", p.Status, drvOut.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	b, err := os.ReadFile(strings.TrimSuffix(script, "run-dra-driver.sh") + "containers.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec recordcri.Records
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	got := rec.ContainersOf("default", "try")
	if len(got) != 1 || len(got[0].CDIDevices) != 1 || !strings.HasPrefix(got[0].CDIDevices[0], "k8s.gpu.gpuplane.io/claim=") {
		t.Errorf("recorded containers of the pod: %+v", got)
	}
	_ = client.CoreV1().Pods("default").Delete(tctx, "try", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}
