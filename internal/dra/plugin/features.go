package plugin

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuplane/gpuplane/internal/dra/slices"
)

// Node labels that turn a feature on or off for one node pool, over the
// DaemonSet's defaults: label the pool's nodes, e.g.
// gpu.gpuplane.io/shared-gpus=true on the pool that shares its GPUs.
const (
	LabelSharedGPUs    = "gpu.gpuplane.io/shared-gpus"
	LabelDynamicMIG    = "gpu.gpuplane.io/dynamic-mig"
	LabelVGPU          = "gpu.gpuplane.io/vgpu"
	LabelNVLinkDomains = "gpu.gpuplane.io/nvlink-domains"
)

// FeaturesForNode applies the node's feature labels to the defaults. A
// label that is not a boolean is an error naming it.
func FeaturesForNode(node *corev1.Node, f slices.Features) (slices.Features, error) {
	for label, field := range map[string]*bool{LabelSharedGPUs: &f.SharedGPUs, LabelDynamicMIG: &f.DynamicMIG,
		LabelVGPU: &f.VGPU, LabelNVLinkDomains: &f.NVLinkDomains} {
		v, ok := node.Labels[label]
		if !ok {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, fmt.Errorf("node %s: label %s=%q: want true or false", node.Name, label, v)
		}
		*field = b
	}
	return f, nil
}
