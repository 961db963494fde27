#!/usr/bin/env bash
# Builds the local control plane's binaries (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and the kubelet from the module
# proxy; kwok) into
# .cache/bin. Go's build cache makes a rebuild take seconds; the first build
# takes about 8 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${GPUPLANE_BIN_DIR:-$root/.cache/bin}"
mkdir -p "$out"
cd "$root/hack/tools"
go build -o "$out/etcd" go.etcd.io/etcd/server/v3
# Stamp the release the module proxy served, as Kubernetes' own build does,
# so the API server reports it (kubectl version refuses v0.0.0-master).
kver="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
kmajor="${kver#v}"; kmajor="${kmajor%%.*}"
kminor="${kver#v*.}"; kminor="${kminor%%.*}"
vpkg=k8s.io/component-base/version
ldflags="-X $vpkg.gitVersion=$kver -X $vpkg.gitMajor=$kmajor -X $vpkg.gitMinor=$kminor -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
go build -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubelet
GOBIN="$out" go install sigs.k8s.io/kwok/cmd/kwok@v0.8.0
# kwok's stage definitions ship in its module; the cluster passes them with --config.
kwokdir="$(go mod download -json sigs.k8s.io/kwok@v0.8.0 | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
mkdir -p "$out/kwok-stages"
cp "$kwokdir"/kustomize/stage/node/fast/node-initialize.yaml \
   "$kwokdir"/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
   "$kwokdir"/kustomize/stage/pod/fast/pod-ready.yaml \
   "$kwokdir"/kustomize/stage/pod/fast/pod-complete.yaml \
   "$kwokdir"/kustomize/stage/pod/fast/pod-delete.yaml "$out/kwok-stages/"
chmod u+w "$out"/kwok-stages/*
echo "control-plane binaries in $out"
