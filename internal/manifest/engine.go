package manifest

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/gpuplane/gpuplane/internal/configure"
)

// DefaultImages are the engines' public images, pinned to releases whose
// flags engineArgs writes; override with --image.
var DefaultImages = map[string]string{
	"vllm":   "vllm/vllm-openai:v0.11.0",
	"sglang": "lmsysorg/sglang:v0.5.3-cu126",
	"trtllm": "nvcr.io/nvidia/tensorrt-llm/release:1.0.0",
}

// Emulate is the backend that runs gpuplane's emulated engine in place of
// a real one (no GPU needed), from gpuplane's own image.
const Emulate = "emulate"

// cacheDir is where engines keep downloaded weights (Hugging Face's cache).
const cacheDir = "/root/.cache/huggingface"

// configDir is where extra engine configuration is mounted, and
// trtllmOptionsFile the name of TensorRT-LLM's extra LLM API options there.
const (
	configDir         = "/etc/gpuplane"
	trtllmOptionsFile = "llm-api-options.yaml"
)

// trtllmDisagg turns on TensorRT-LLM's KV cache transceiver for a P/D worker.
const trtllmDisagg = "cache_transceiver_config:\n  backend: DEFAULT\n"

// trtllmADP turns TensorRT-LLM's attention TP into attention DP: each of
// the tp_size GPUs is a rank with its own requests.
const trtllmADP = "enable_attention_dp: true\n"

func itoa(n int) string { return strconv.Itoa(n) }

// hasDP reports whether any pool of c has attention-DP workers.
func hasDP(c configure.Config) bool {
	for _, p := range []*configure.Pool{c.Agg, c.Prefill, c.Decode} {
		if p != nil && p.DP > 1 {
			return true
		}
	}
	return false
}

// ranks is how many attention-DP ranks a worker of p has.
func ranks(p *configure.Pool) int { return max(p.DP, 1) }

// rankBatch is the in-flight requests of one rank: the engines' batch caps
// (vLLM's max-num-seqs, TensorRT-LLM's max_batch_size) count per rank;
// SGLang's max-running-requests counts the worker's and gives each rank an
// equal share, rounded down, so it gets whole ranks' worth.
func rankBatch(p *configure.Pool) int { return (p.Batch + ranks(p) - 1) / ranks(p) }

// trtllmOptions is the extra LLM API options file of a TensorRT-LLM worker
// of p (its draft included), empty when it needs none.
func (o *Options) trtllmOptions(p *configure.Pool) string {
	var s string
	if p.Role != "agg" {
		s += trtllmDisagg
	}
	if p.DP > 1 {
		s += trtllmADP
	}
	return s + o.specOptions(p)
}

// engineArgs is the command line of one worker of pool p.
func (o *Options) engineArgs(p *configure.Pool) []string {
	pp, model := max(p.PP, 1), o.Model
	switch o.Backend {
	case Emulate:
		a := []string{"gpuplane", "emulate", "--model", model, "--gpu", p.Device, "--tp", itoa(p.TP), "--role", p.Role,
			"--max-num-seqs", itoa(rankBatch(p)), "--host", "0.0.0.0", "--port", itoa(Port)}
		if p.EP > 1 {
			a = append(a, "--ep", itoa(p.EP))
		}
		if p.DP > 1 {
			a = append(a, "--dp", itoa(p.DP))
		}
		return a
	case "sglang":
		a := []string{"python3", "-m", "sglang.launch_server", "--model-path", model, "--host", "0.0.0.0", "--port", itoa(Port),
			"--tp", itoa(p.TP * ranks(p)), "--max-running-requests", itoa(rankBatch(p) * ranks(p))}
		return append(a, sglangShape(p)...)
	case "trtllm":
		// With attention DP, tp_size is every GPU of the worker.
		a := []string{"trtllm-serve", model, "--host", "0.0.0.0", "--port", itoa(Port), "--backend", "pytorch",
			"--tp_size", itoa(p.TP * ranks(p)), "--pp_size", itoa(pp), "--max_batch_size", itoa(rankBatch(p))}
		if p.EP > 1 {
			a = append(a, "--ep_size", itoa(p.EP))
		}
		if o.trtllmOptions(p) != "" {
			a = append(a, "--extra_llm_api_options", configDir+"/"+trtllmOptionsFile)
		}
		return a
	}
	a := append([]string{"vllm", "serve", model, "--host", "0.0.0.0", "--port", itoa(Port)}, vllmShape(p)...)
	if p.Role != "agg" {
		a = append(a, "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`)
	}
	return a
}

// vllmShape is vLLM's parallelism and batch flags, the same for its own
// server and Dynamo's vLLM worker.
func vllmShape(p *configure.Pool) []string {
	a := []string{"--tensor-parallel-size", itoa(p.TP), "--max-num-seqs", itoa(rankBatch(p))}
	if p.PP > 1 {
		a = append(a, "--pipeline-parallel-size", itoa(p.PP))
	}
	if p.DP > 1 {
		a = append(a, "--data-parallel-size", itoa(p.DP))
	}
	if p.EP > 1 {
		a = append(a, "--enable-expert-parallel")
	}
	return a
}

// sglangShape is SGLang's pipeline, attention-DP, expert and P/D-role
// flags, the same for its own server and Dynamo's SGLang worker. With
// attention DP, SGLang's --tp counts every GPU of the worker and --dp
// splits them into ranks.
func sglangShape(p *configure.Pool) []string {
	var a []string
	if p.PP > 1 {
		a = append(a, "--pp-size", itoa(p.PP))
	}
	if p.DP > 1 {
		a = append(a, "--dp", itoa(p.DP), "--enable-dp-attention")
	}
	if p.EP > 1 {
		a = append(a, "--ep-size", itoa(p.EP))
	}
	if p.Role != "agg" {
		a = append(a, "--disaggregation-mode", p.Role, "--disaggregation-transfer-backend", "nixl")
	}
	return a
}

// container is the engine container of pool p and any config files it reads.
func (o *Options) container(p *configure.Pool) (corev1.Container, map[string]string) {
	image := o.Image
	if image == "" {
		image = DefaultImages[o.Backend]
		if o.Backend == Emulate {
			image = o.FrontendImage
		}
	}
	args := append(append(o.engineArgs(p), o.precisionArgs()...), o.specArgs(p)...)
	health := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(Port)}}
	c := corev1.Container{
		Name:    "engine",
		Image:   image,
		Command: args[:1],
		Args:    args[1:],
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: Port}},
		// Loading weights takes minutes: the startup probe allows 30 of
		// them before liveness starts counting.
		StartupProbe:   &corev1.Probe{ProbeHandler: health, PeriodSeconds: 10, FailureThreshold: 180},
		ReadinessProbe: &corev1.Probe{ProbeHandler: health, PeriodSeconds: 5, FailureThreshold: 3},
		LivenessProbe:  &corev1.Probe{ProbeHandler: health, PeriodSeconds: 15, FailureThreshold: 4, TimeoutSeconds: 5},
		Env:            []corev1.EnvVar{{Name: "HF_HOME", Value: cacheDir}},
		VolumeMounts: []corev1.VolumeMount{{Name: "model-cache", MountPath: cacheDir},
			{Name: "shm", MountPath: "/dev/shm"}},
	}
	if o.HFTokenSecret != "" {
		c.Env = append(c.Env, corev1.EnvVar{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: o.HFTokenSecret}, Key: "HF_TOKEN", Optional: ptr.To(true)}}})
	}
	if opts := o.trtllmOptions(p); o.Backend == "trtllm" && opts != "" {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: configDir, ReadOnly: true})
		return c, map[string]string{trtllmOptionsFile: opts}
	}
	return c, nil
}

// precisionArgs asks the engine to quantise weights and cache on load.
func (o *Options) precisionArgs() []string {
	var a []string
	switch o.Backend {
	case "vllm", "sglang":
		if o.Quantization != "" {
			a = append(a, "--quantization", o.Quantization)
		}
		if o.KVCache != "" {
			a = append(a, "--kv-cache-dtype", o.KVCache)
		}
	case "trtllm":
		if o.KVCache != "" {
			a = append(a, "--kv_cache_dtype", o.KVCache)
		}
	case Emulate:
		// Without --precision the emulator prices the model's own precision.
		if o.Quantization != "" {
			a = append(a, "--precision", o.Quantization)
		}
		if o.KVCache != "" {
			a = append(a, "--kv-precision", o.KVCache)
		}
	}
	return a
}

// volumes are the model cache (a claim, or an emptyDir) and shared memory
// for the engine's worker processes (NCCL and the tokenizer pool use it).
func (o *Options) volumes() []corev1.Volume {
	cache := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if o.ModelCacheClaim != "" {
		cache = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.ModelCacheClaim}}
	}
	shm := resource.MustParse("16Gi")
	return []corev1.Volume{{Name: "model-cache", VolumeSource: cache},
		{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}}}
}

func extraVolumes(extra map[string]string, name string) []corev1.Volume {
	if extra == nil {
		return nil
	}
	return []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"}}}}}
}

func configMap(o *Options, name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: o.meta(name, labels), Data: data}
}

// leaderWorkerSet groups size pods (one per pipeline stage) per replica.
// The LeaderWorkerSet API module is not served by the module proxy, so the
// object is written as its documented leaderworkerset.x-k8s.io/v1 fields.
func leaderWorkerSet(meta metav1.ObjectMeta, replicas, size int32, tmpl corev1.PodTemplateSpec) map[string]any {
	return map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1",
		"kind":       "LeaderWorkerSet",
		"metadata":   meta,
		"spec": map[string]any{
			"replicas":      replicas,
			"startupPolicy": "LeaderCreated",
			"leaderWorkerTemplate": map[string]any{
				"size":           size,
				"workerTemplate": tmpl,
			},
		},
	}
}
