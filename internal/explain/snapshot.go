// Package explain answers "why is my pod Pending?" for DRA claims: the
// verdict comes from Kubernetes' own structured allocator (the scheduler's
// code), the reasons from evaluating every device of every candidate node
// against each request: class and request selectors conjunct by conjunct
// with the attribute values seen, devices and shares already allocated and
// to whom, shared counters used up, taints not tolerated, node selection.
// It also counts how many more claims of a template fit, with what-if nodes.
package explain

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// Snapshot is the cluster state explain reasons over.
type Snapshot struct {
	Nodes      []*corev1.Node
	Slices     []*resourceapi.ResourceSlice
	Classes    []*resourceapi.DeviceClass
	Claims     []*resourceapi.ResourceClaim
	Pods       []*corev1.Pod
	TaintRules []*resourceapi.DeviceTaintRule
	// WhatIfClasses names the DeviceClasses AddFleet added because the
	// cluster (or dump) had none of that name.
	WhatIfClasses []string
}

// Live lists what explain needs from a cluster.
func Live(ctx context.Context, c kubernetes.Interface) (*Snapshot, error) {
	s := &Snapshot{}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		s.Nodes = append(s.Nodes, &nodes.Items[i])
	}
	slices, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list resourceslices: %w", err)
	}
	for i := range slices.Items {
		s.Slices = append(s.Slices, &slices.Items[i])
	}
	classes, err := c.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list deviceclasses: %w", err)
	}
	for i := range classes.Items {
		s.Classes = append(s.Classes, &classes.Items[i])
	}
	claims, err := c.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list resourceclaims: %w", err)
	}
	for i := range claims.Items {
		s.Claims = append(s.Claims, &claims.Items[i])
	}
	// A cluster that does not serve DeviceTaintRules has none; any other
	// failure would hide taints, so it is an error.
	rules, err := c.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("list devicetaintrules: %w", err)
	}
	if err == nil {
		for i := range rules.Items {
			s.TaintRules = append(s.TaintRules, &rules.Items[i])
		}
	}
	return s, nil
}

// AddPods lists the pods of namespace ns ("" for all) into the snapshot.
func (s *Snapshot) AddPods(ctx context.Context, c kubernetes.Interface, ns string) error {
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		s.Pods = append(s.Pods, &pods.Items[i])
	}
	return nil
}

// Load reads a dump: a YAML stream of objects or of v1 Lists, as
// `kubectl get nodes,resourceslices,deviceclasses,resourceclaims,pods -A -o yaml` writes it.
func Load(r io.Reader) (*Snapshot, error) {
	s := &Snapshot{}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 1<<20)
	for doc := 1; ; doc++ {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("dump document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 {
			continue
		}
		if err := s.add(raw.Raw, fmt.Sprintf("document %d", doc)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Snapshot) add(raw []byte, where string) error {
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err) && gvk != nil:
		return fmt.Errorf("dump %s: kind %s (%s) is not used by explain; %s", where, gvk.Kind, gvk.GroupVersion(), dumpKinds)
	case runtime.IsMissingKind(err) || runtime.IsMissingVersion(err):
		return fmt.Errorf("dump %s: an object without apiVersion and kind; a dump is what kubectl get -o yaml writes", where)
	case err != nil:
		return fmt.Errorf("dump %s: %w", where, err)
	}
	switch o := obj.(type) {
	case *corev1.List:
		for i, item := range o.Items {
			if err := s.add(item.Raw, fmt.Sprintf("%s item %d", where, i)); err != nil {
				return err
			}
		}
	case *corev1.Node:
		s.Nodes = append(s.Nodes, o)
	case *corev1.Pod:
		s.Pods = append(s.Pods, o)
	case *resourceapi.ResourceSlice:
		s.Slices = append(s.Slices, o)
	case *resourceapi.DeviceClass:
		s.Classes = append(s.Classes, o)
	case *resourceapi.ResourceClaim:
		for _, c := range s.Claims {
			if c.Namespace == o.Namespace && c.Name == o.Name {
				return fmt.Errorf("dump %s: claim %s/%s appears twice; keep one copy", where, o.Namespace, o.Name)
			}
		}
		s.Claims = append(s.Claims, o)
	case *resourceapi.DeviceTaintRule:
		s.TaintRules = append(s.TaintRules, o)
	default:
		return fmt.Errorf("dump %s: kind %s is not used by explain; %s", where, gvk.Kind, dumpKinds)
	}
	return nil
}

const dumpKinds = "keep Nodes, Pods, ResourceSlices, DeviceClasses, ResourceClaims, DeviceTaintRules (resource.k8s.io/v1)"

// Claim finds a claim.
func (s *Snapshot) Claim(ns, name string) (*resourceapi.ResourceClaim, error) {
	var names []string
	for _, c := range s.Claims {
		if c.Namespace == ns && c.Name == name {
			return c, nil
		}
		if c.Namespace == ns {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	return nil, fmt.Errorf("resourceclaim %s/%s not found; claims in %s: %v", ns, name, ns, names)
}

// Pod finds a pod.
func (s *Snapshot) Pod(ns, name string) (*corev1.Pod, error) {
	for _, p := range s.Pods {
		if p.Namespace == ns && p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s not found", ns, name)
}

// PodClaims resolves a pod's resource claims (direct, or generated from a
// template as recorded in the pod's status).
func (s *Snapshot) PodClaims(p *corev1.Pod) ([]*resourceapi.ResourceClaim, error) {
	var out []*resourceapi.ResourceClaim
	for _, pc := range p.Spec.ResourceClaims {
		name := ""
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		} else {
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.Name == pc.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
		}
		if name == "" {
			return nil, fmt.Errorf("pod %s/%s: claim %q from template %v not created yet (is kube-controller-manager running?)",
				p.Namespace, p.Name, pc.Name, pc.ResourceClaimTemplateName)
		}
		c, err := s.Claim(p.Namespace, name)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		out = append(out, c)
	}
	if p.Status.ExtendedResourceClaimStatus != nil {
		c, err := s.Claim(p.Namespace, p.Status.ExtendedResourceClaimStatus.ResourceClaimName)
		if err == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// withDefaults fills in what the API server defaults on create, for specs
// read from files: allocation mode ExactCount with count 1.
func withDefaults(spec resourceapi.ResourceClaimSpec) resourceapi.ResourceClaimSpec {
	spec = *spec.DeepCopy()
	def := func(mode *resourceapi.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourceapi.DeviceAllocationModeExactCount
		}
		if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if e := r.Exactly; e != nil {
			def(&e.AllocationMode, &e.Count)
		}
		for j := range r.FirstAvailable {
			def(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
	return spec
}
