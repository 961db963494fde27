#!/usr/bin/env bash
# Regenerates the API's deepcopy functions and the CRD from api/ with
# controller-gen (pinned): the CRD goes into the controller's embedded
# copy (internal/operator/crds, which `gpuplane dev cluster up --controller`
# installs) and the chart's crds/. The generated files are committed; CI
# fails when they are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
CONTROLLER_GEN="go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"
$CONTROLLER_GEN object paths=./api/...
$CONTROLLER_GEN crd paths=./api/... output:crd:dir=internal/operator/crds
cp internal/operator/crds/*.yaml deploy/helm/gpuplane/crds/
