package testcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUNode describes a fake GPU node the way cloud providers label real ones.
type GPUNode struct {
	Name         string
	InstanceType string // node.kubernetes.io/instance-type, e.g. Standard_NV36ads_A10_v5
	NodePool     string // the provider's pool label value
	GPUProduct   string // nvidia.com/gpu.product
	GPUs         int    // nvidia.com/gpu.count
	Labels       map[string]string
	CPU, Memory  string // capacity; defaults 32 and 256Gi
}

// CreateGPUNode registers a kwok-managed node and waits until kwok reports it Ready.
func (c *Cluster) CreateGPUNode(ctx context.Context, n GPUNode) (*corev1.Node, error) {
	if n.CPU == "" {
		n.CPU = "32"
	}
	if n.Memory == "" {
		n.Memory = "256Gi"
	}
	labels := map[string]string{
		"type":                             "kwok",
		"kubernetes.io/hostname":           n.Name,
		"kubernetes.io/os":                 "linux",
		"kubernetes.io/arch":               "amd64",
		"nvidia.com/gpu.present":           "true",
		"nvidia.com/gpu.count":             fmt.Sprint(n.GPUs),
		"node.kubernetes.io/instance-type": n.InstanceType,
		"gpuplane.io/node-pool":            n.NodePool,
	}
	if n.GPUProduct != "" {
		labels["nvidia.com/gpu.product"] = n.GPUProduct
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(n.CPU),
		corev1.ResourceMemory: resource.MustParse(n.Memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	created, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", n.Name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	got, err := c.waitNodeReady(wctx, created.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("node %s never became Ready (kwok log: %s): %w", n.Name, c.LogTail("kwok", 5), err)
	}
	return got, nil
}

// WaitNodeReady waits until node name is Ready without the not-ready taint.
func (c *Cluster) WaitNodeReady(ctx context.Context, name string) (*corev1.Node, error) {
	return c.waitNodeReady(ctx, name, nil)
}

// errAgentExited ends a wait for a node whose agent (a kubelet) has exited.
var errAgentExited = errors.New("the node's agent exited")

// waitNodeReady polls until node name is Ready without the not-ready
// taint. A close of exited ends the wait early with errAgentExited.
func (c *Cluster) waitNodeReady(ctx context.Context, name string, exited <-chan struct{}) (*corev1.Node, error) {
	for {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil && nodeReady(n) && !hasNotReadyTaint(n) {
			return n, nil
		}
		select {
		case <-exited:
			return nil, errAgentExited
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasNotReadyTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == "node.kubernetes.io/not-ready" {
			return true
		}
	}
	return false
}
