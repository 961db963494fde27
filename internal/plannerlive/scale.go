package plannerlive

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// Target names a scalable object: any resource with a scale subresource
// (Deployment, StatefulSet, LeaderWorkerSet, a custom resource).
type Target struct {
	Group     string `json:"group,omitempty"` // "apps", "leaderworkerset.x-k8s.io", "" for core
	Version   string `json:"version"`
	Resource  string `json:"resource"` // plural: deployments, leaderworkersets
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (t Target) String() string {
	return fmt.Sprintf("%s/%s %s/%s", t.Resource, t.Version, t.Namespace, t.Name)
}

// ScaleClient reads and sets replicas through the scale subresource.
type ScaleClient struct {
	Client dynamic.Interface
	Target Target
}

func (s *ScaleClient) res() dynamic.ResourceInterface {
	t := s.Target
	return s.Client.Resource(schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}).Namespace(t.Namespace)
}

// Replicas returns the target's desired replicas.
func (s *ScaleClient) Replicas(ctx context.Context) (int, error) {
	u, err := s.res().Get(ctx, s.Target.Name, metav1.GetOptions{}, "scale")
	if err != nil {
		return 0, fmt.Errorf("get scale of %s: %w", s.Target, err)
	}
	n, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if err != nil {
		return 0, fmt.Errorf("scale of %s: spec.replicas: %w", s.Target, err)
	}
	return int(n), nil
}

// SetReplicas writes replicas, re-reading and retrying on a conflict.
func (s *ScaleClient) SetReplicas(ctx context.Context, n int) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := s.res().Get(ctx, s.Target.Name, metav1.GetOptions{}, "scale")
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, int64(n), "spec", "replicas"); err != nil {
			return err
		}
		_, err = s.res().Update(ctx, u, metav1.UpdateOptions{FieldManager: "gpuplane-planner"}, "scale")
		return err
	})
	if err != nil {
		return fmt.Errorf("scale %s to %d: %w", s.Target, n, err)
	}
	return nil
}
