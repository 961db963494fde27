package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/gpuplane/gpuplane/internal/dra/classes"
)

// Publisher publishes a fleet's slices.
type Publisher struct {
	Client kubernetes.Interface
	Driver string
	// CreateNodes registers each node as a kwok-managed Node first (for the
	// local control plane); off, the nodes must exist.
	CreateNodes bool
	// InstallClasses creates or updates the driver's DeviceClasses, without
	// which no claim can select the published devices.
	InstallClasses bool
	// ErrorHandler receives publishing errors (default: logged by the controller).
	ErrorHandler func(ctx context.Context, err error, msg string)
}

// Running is a published fleet.
type Running struct {
	controllers []*resourceslice.Controller
	want        int
	nodes       map[string]bool
	client      kubernetes.Interface
	driver      string
}

// Start creates the nodes (if asked) and starts one slice controller per
// node. Controllers start in parallel: each waits for its informer to sync,
// which the library polls once a second.
func (p *Publisher) Start(ctx context.Context, nodes []Node) (*Running, error) {
	r := &Running{client: p.Client, driver: p.Driver, nodes: map[string]bool{}}
	if p.InstallClasses {
		if err := InstallClasses(ctx, p.Client, p.Driver); err != nil {
			return nil, err
		}
	}
	for _, n := range nodes {
		r.nodes[n.Name] = true
		if p.CreateNodes {
			if err := p.CreateNode(ctx, n); err != nil {
				return nil, err
			}
		}
		r.want += len(n.Slices.Slices)
	}
	r.controllers = make([]*resourceslice.Controller, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			r.controllers[i], errs[i] = resourceslice.StartController(ctx, resourceslice.Options{
				DriverName: p.Driver, KubeClient: p.Client, ErrorHandler: p.ErrorHandler,
				Owner:     &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: n.Name},
				Resources: &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{n.Name: {Slices: n.Slices.Slices}}},
			})
			if errs[i] != nil {
				errs[i] = fmt.Errorf("publish node %s: %w", n.Name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// Stop stops the controllers; the slices stay until their Nodes go.
func (r *Running) Stop() {
	for _, c := range r.controllers {
		if c != nil {
			c.Stop()
		}
	}
}

// WaitPublished blocks until the API server holds every slice of the
// fleet. Only the fleet's nodes count: the driver may publish for others.
func (r *Running) WaitPublished(ctx context.Context) error {
	for {
		have := 0
		list, err := r.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + r.driver})
		if err == nil {
			for _, s := range list.Items {
				if s.Spec.NodeName != nil && r.nodes[*s.Spec.NodeName] {
					have++
				}
			}
			if have >= r.want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet: %d of %d slices published: %w", have, r.want, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// InstallClasses creates the driver's DeviceClasses, or brings existing
// ones to the driver's spec.
func InstallClasses(ctx context.Context, client kubernetes.Interface, driver string) error {
	api := client.ResourceV1().DeviceClasses()
	for _, c := range classes.All(driver, classes.Options{}) {
		_, err := api.Create(ctx, &c, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *resourceapi.DeviceClass
			if cur, err = api.Get(ctx, c.Name, metav1.GetOptions{}); err == nil {
				cur.Spec.Selectors = c.Spec.Selectors
				_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("install DeviceClass %s: %w", c.Name, err)
		}
	}
	return nil
}

// CreateNode registers n as a kwok-managed Node (an existing one is kept).
func (p *Publisher) CreateNode(ctx context.Context, n Node) error {
	labels := map[string]string{"type": "kwok", "kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
	for k, v := range n.Labels {
		labels[k] = v
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("110")}
	_, err := p.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	return nil
}
