// Package v1alpha1 is the gpuplane.io/v1alpha1 API: ServingDeployment, an
// LLM serving deployment described by its SLO, which gpuplane's controller
// plans on the cluster's DRA devices, deploys and autoscales.
//
// +kubebuilder:object:generate=true
// +groupName=gpuplane.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "gpuplane.io", Version: "v1alpha1"}

// AddToScheme adds the API's types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ServingDeployment{}, &ServingDeploymentList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
