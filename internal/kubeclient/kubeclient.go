// Package kubeclient loads a Kubernetes client configuration the way the
// CLIs accept it: an explicit kubeconfig, else $KUBECONFIG or ~/.kube/config,
// else the in-cluster service account.
package kubeclient

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config returns the REST configuration for path ("" for the defaults).
func Config(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if path == "" {
			if ic, ierr := rest.InClusterConfig(); ierr == nil {
				return ic, nil
			}
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return rc, nil
}

// Clientset returns a typed client for path.
func Clientset(path string) (kubernetes.Interface, error) {
	rc, err := Config(path)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, nil
}
