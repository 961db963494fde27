//go:build tools

// Package tools pins the Kubernetes control-plane binaries the end-to-end
// tests run: k8s.io/kubernetes with its staging modules at the same
// release, and the etcd server.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
