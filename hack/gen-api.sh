#!/usr/bin/env bash
# Regenerates the API's deepcopy functions and the CRD from api/ with
# controller-gen (pinned). The generated files are committed; the test
# api/v1alpha1 TestCRDUpToDate fails when they are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
CONTROLLER_GEN="go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"
$CONTROLLER_GEN object paths=./api/...
$CONTROLLER_GEN crd paths=./api/... output:crd:dir=deploy/helm/gpuplane/crds
