// Package testcluster runs a real Kubernetes control plane on loopback for
// end-to-end tests and local development: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok (fake nodes and pods) as
// child processes. Binaries come from hack/build-cluster-bins.sh.
package testcluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// Options configure a cluster.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok and kwok-stages/. Default: $GPUPLANE_BIN_DIR or
	// .cache/bin in the repository root.
	BinDir string
	// Dir holds certificates, data and logs. Default: a new temporary folder.
	Dir string
	// Log receives the components' output (default: files in Dir/logs).
	Log io.Writer
	// StartTimeout bounds the start (default 90 s).
	StartTimeout time.Duration
}

// Cluster is a running control plane.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	procs      []*exec.Cmd
	binDir     string
	ownDir     bool
}

var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// DefaultBinDir finds the binaries: $GPUPLANE_BIN_DIR, else .cache/bin
// above the working directory.
func DefaultBinDir() string {
	if d := os.Getenv("GPUPLANE_BIN_DIR"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "hack", "tools", "go.mod")); err == nil {
				return filepath.Join(d, ".cache", "bin")
			}
		}
		if filepath.Dir(d) == d {
			return filepath.Join(wd, ".cache", "bin")
		}
	}
}

// CheckBinaries says which binaries are missing and how to build them.
func CheckBinaries(dir string) error {
	var missing []string
	for _, c := range components {
		if _, err := os.Stat(filepath.Join(dir, c)); err != nil {
			missing = append(missing, c)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kwok-stages")); err != nil {
		missing = append(missing, "kwok-stages/")
	}
	if len(missing) > 0 {
		return fmt.Errorf("control-plane binaries missing in %s: %s; build them with: bash hack/build-cluster-bins.sh (about 8 minutes the first time)",
			dir, strings.Join(missing, ", "))
	}
	return nil
}

// Start launches the control plane and waits until it serves, schedules
// and has the default ServiceAccount. On error everything started is stopped.
func Start(ctx context.Context, opt Options) (_ *Cluster, err error) {
	if opt.BinDir == "" {
		opt.BinDir = DefaultBinDir()
	}
	if err := CheckBinaries(opt.BinDir); err != nil {
		return nil, err
	}
	if opt.StartTimeout == 0 {
		opt.StartTimeout = 90 * time.Second
	}
	c := &Cluster{Dir: opt.Dir, binDir: opt.BinDir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "gpuplane-cluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (component logs in %s/logs)", err, c.Dir)
			c.ownDir = false // keep the logs of a failed start
			c.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, opt.StartTimeout)
	defer cancel()
	pki := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPriv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})
	saPubDER, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	saPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})
	tokenBytes := make([]byte, 16)
	_, _ = rand.Read(tokenBytes)
	token := hex.EncodeToString(tokenBytes)
	files := map[string][]byte{"serving.crt": certPEM, "serving.key": keyPEM, "sa.key": saPriv, "sa.pub": saPub,
		"tokens.csv": []byte(token + ",admin,admin,system:masters\n")}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(pki, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	p := func(n string) string { return filepath.Join(pki, n) }
	bin := func(n string) string { return filepath.Join(opt.BinDir, n) }

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := c.spawn(opt, "etcd", bin("etcd"), "--name=gpuplane", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=gpuplane="+peerURL, "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, http.DefaultClient, etcdURL+"/health"); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	host := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if err := c.spawn(opt, "kube-apiserver", bin("kube-apiserver"), "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(apiPort),
		"--tls-cert-file="+p("serving.crt"), "--tls-private-key-file="+p("serving.key"),
		"--token-auth-file="+p("tokens.csv"), "--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+p("sa.pub"),
		"--service-account-signing-key-file="+p("sa.key"), "--service-cluster-ip-range=10.0.0.0/24",
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"), "--allow-privileged=true",
		// The apiserver may not advertise a loopback address through the endpoints reconciler.
		"--endpoint-reconciler-type=none"); err != nil {
		return nil, err
	}
	c.Config = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: certPEM},
		QPS: 200, Burst: 400}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, host, token, certPEM); err != nil {
		return nil, err
	}
	tr, err := rest.TransportFor(c.Config)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, &http.Client{Transport: tr, Timeout: 5 * time.Second}, host+"/readyz"); err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	kc := "--kubeconfig=" + c.Kubeconfig
	if err := c.spawn(opt, "kube-controller-manager", bin("kube-controller-manager"), kc,
		"--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
		"--service-account-private-key-file="+p("sa.key"), "--root-ca-file="+p("serving.crt"),
		"--leader-elect=false", "--secure-port=0", "--controllers=*",
		// The default 20 QPS makes the ReplicaSet and ResourceClaim controllers, not the
		// scheduler, the bottleneck when hundreds of pods with claims arrive at once.
		"--kube-api-qps=300", "--kube-api-burst=600"); err != nil {
		return nil, err
	}
	if err := c.spawn(opt, "kube-scheduler", bin("kube-scheduler"), kc,
		"--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
		"--leader-elect=false", "--secure-port=0", "--kube-api-qps=300", "--kube-api-burst=600"); err != nil {
		return nil, err
	}
	kwokArgs := []string{kc, "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=127.0.1.0/24", "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40"}
	stages, _ := filepath.Glob(filepath.Join(opt.BinDir, "kwok-stages", "*.yaml"))
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config="+s)
	}
	if err := c.spawn(opt, "kwok", bin("kwok"), kwokArgs...); err != nil {
		return nil, err
	}
	if err := c.waitServiceAccount(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) spawn(opt Options, name, path string, args ...string) error {
	cmd := exec.Command(path, args...)
	var out io.Writer = opt.Log
	if out == nil {
		logs := filepath.Join(c.Dir, "logs")
		_ = os.MkdirAll(logs, 0o755)
		f, err := os.Create(filepath.Join(logs, name+".log"))
		if err != nil {
			return err
		}
		out = f
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group, so Stop reaches every child; Pdeathsig ends them
	// if the test binary dies without running Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// PIDs lists the running components' process ids.
func (c *Cluster) PIDs() []int {
	var out []int
	for _, p := range c.procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

// Stop terminates every component (newest first) and removes a temporary Dir.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	c.procs = nil
	if c.ownDir {
		_ = os.RemoveAll(c.Dir)
	}
}

// LogTail returns the end of a component's log, for failure messages.
func (c *Cluster) LogTail(component string, lines int) string {
	f, err := os.Open(filepath.Join(c.Dir, "logs", component+".log"))
	if err != nil {
		return ""
	}
	defer f.Close()
	var all []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		all = append(all, sc.Text())
	}
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func (c *Cluster) waitServiceAccount(ctx context.Context) error {
	for {
		_, err := c.Client.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("default ServiceAccount never appeared (kube-controller-manager log: %s): %w",
				c.LogTail("kube-controller-manager", 5), errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func waitHTTP(ctx context.Context, client *http.Client, url string) error {
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", errors.Join(ctx.Err(), last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts reserves n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeKubeconfig(path, host, token string, ca []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gpuplane"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["gpuplane"] = &clientcmdapi.Context{Cluster: "gpuplane", AuthInfo: "admin"}
	cfg.CurrentContext = "gpuplane"
	return clientcmd.WriteToFile(*cfg, path)
}
