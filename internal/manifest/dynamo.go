package manifest

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuplane/gpuplane/internal/configure"
)

// DefaultDynamoImages are Dynamo's runtime images per backend; pin a version with --image.
var DefaultDynamoImages = map[string]string{
	"vllm":   "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest",
	"sglang": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:latest",
	"trtllm": "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:latest",
}

var dynamoPrefix = map[string]string{"vllm": "Vllm", "sglang": "Sglang", "trtllm": "Trtllm"}

// DynamoArgs is the command line of a Dynamo worker of pool p.
func DynamoArgs(backend, model string, p *configure.Pool) []string {
	pp := max(p.PP, 1)
	switch backend {
	case "sglang":
		a := []string{"python3", "-m", "dynamo.sglang", "--model-path", model, "--tp", itoa(p.TP * ranks(p))}
		return append(a, sglangShape(p)...)
	case "trtllm":
		a := []string{"python3", "-m", "dynamo.trtllm", "--model-path", model, "--tensor-parallel-size", itoa(p.TP * ranks(p)),
			"--pipeline-parallel-size", itoa(pp), "--max-batch-size", itoa(rankBatch(p))}
		if p.EP > 1 {
			a = append(a, "--expert-parallel-size", itoa(p.EP))
		}
		if p.Role != "agg" {
			a = append(a, "--disaggregation-mode", p.Role)
		}
		return a
	}
	a := append([]string{"python3", "-m", "dynamo.vllm", "--model", model}, vllmShape(p)...)
	if p.Role == "prefill" {
		a = append(a, "--is-prefill-worker")
	}
	return a
}

// Dynamo renders the configuration as a DynamoGraphDeployment
// (nvidia.com/v1alpha1): a frontend and one worker service per pool.
func Dynamo(c configure.Config, o Options) ([]byte, error) {
	if err := o.normalise(); err != nil {
		return nil, err
	}
	prefix, ok := dynamoPrefix[o.Backend]
	if !ok {
		return nil, fmt.Errorf("backend: %q has no Dynamo worker", o.Backend)
	}
	if o.Backend == "trtllm" && hasDP(c) {
		return nil, fmt.Errorf("emit dynamo: TensorRT-LLM attention DP (%s) is turned on in the worker's engine options, which this manifest does not write; use --emit k8s, or a configuration without dp", configure.Describe(c))
	}
	image := o.Image
	if image == "" {
		image = DefaultDynamoImages[o.Backend]
	}
	services := map[string]any{
		"Frontend": map[string]any{
			"componentType": "frontend",
			"replicas":      1,
			"extraPodSpec":  map[string]any{"mainContainer": map[string]any{"image": image}},
		},
	}
	names := map[string]string{"agg": prefix + "Worker", "prefill": prefix + "PrefillWorker", "decode": prefix + "DecodeWorker"}
	for _, p := range []*configure.Pool{c.Agg, c.Prefill, c.Decode} {
		if p == nil {
			continue
		}
		if o.Backend == "trtllm" && o.specOptions(p) != "" {
			return nil, fmt.Errorf("speculative decoding: Dynamo's TensorRT-LLM worker reads its draft from an engine config file, which this DynamoGraphDeployment does not carry; emit k8s, or add speculative_config to the worker's --extra-engine-args yourself")
		}
		args := append(append(DynamoArgs(o.Backend, o.Model, p), o.precisionArgs()...), o.specArgs(p)...)
		svc := map[string]any{
			"componentType": "worker",
			"replicas":      p.Workers,
			"resources":     map[string]any{"limits": map[string]any{"gpu": itoa(p.GPUsPerWorker)}},
			"extraPodSpec": map[string]any{"mainContainer": map[string]any{
				"image":   image,
				"command": args[:3],
				"args":    args[3:],
			}},
		}
		if p.Role != "agg" {
			svc["subComponentType"] = p.Role
		}
		if p.PP > 1 {
			svc["multinode"] = map[string]any{"nodeCount": p.PP}
		}
		services[names[p.Role]] = svc
	}
	obj := map[string]any{
		"apiVersion": "nvidia.com/v1alpha1",
		"kind":       "DynamoGraphDeployment",
		"metadata":   metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "gpuplane"}},
		"spec": map[string]any{
			"backendFramework": o.Backend,
			"services":         services,
		},
	}
	return render([]any{obj})
}
