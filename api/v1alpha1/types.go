package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServingDeployment serves one model under a latency SLO: the controller
// sizes it on the devices the cluster has free, creates its pools and
// router, and keeps the SLO with the planner.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sd;sdeploy,categories=gpuplane
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name: at most 40 lowercase letters, digits and '-', starting with a letter (it names the pools' Services and Deployments)"
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model.name`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.plan.mode`
// +kubebuilder:printcolumn:name="Device",type=string,JSONPath=`.status.plan.device`
// +kubebuilder:printcolumn:name="Workers",type=string,JSONPath=`.status.replicas.summary`
// +kubebuilder:printcolumn:name="TTFT",type=string,JSONPath=`.status.observed.ttft`
// +kubebuilder:printcolumn:name="ITL",type=string,JSONPath=`.status.observed.itl`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServingDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServingDeploymentSpec   `json:"spec"`
	Status ServingDeploymentStatus `json:"status,omitempty"`
}

// ServingDeploymentList is a list of ServingDeployments.
//
// +kubebuilder:object:root=true
type ServingDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServingDeployment `json:"items"`
}

// ServingDeploymentSpec is what to serve and how well.
type ServingDeploymentSpec struct {
	Model  ModelSpec  `json:"model"`
	Engine EngineSpec `json:"engine,omitempty"`
	SLO    SLOSpec    `json:"slo"`
	// Traffic is the load the deployment is sized for at the start; the
	// planner follows the load it then sees.
	Traffic TrafficSpec `json:"traffic"`
	Devices DeviceSpec  `json:"devices,omitempty"`
	Budget  BudgetSpec  `json:"budget,omitempty"`
	Planner PlannerSpec `json:"planner,omitempty"`
	Serving ServingSpec `json:"serving,omitempty"`
}

// ModelSpec names the model: a catalog name or Hugging Face id, and
// optionally its config.json in a ConfigMap for models the catalog lacks.
type ModelSpec struct {
	// Name is what the workers load, e.g. Qwen/Qwen3-32B-FP8.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	Name string `json:"name"`
	// ConfigMap holds the model's Hugging Face config.json under the key
	// config.json (in the object's namespace).
	// +optional
	ConfigMap *corev1.LocalObjectReference `json:"configMap,omitempty"`
}

// EngineSpec is the serving engine.
// +kubebuilder:validation:XValidation:rule="!has(self.image) || self.image.contains(':') || self.image.contains('@')",message="engine.image: pin a tag or digest, e.g. vllm/vllm-openai:v0.11.0"
type EngineSpec struct {
	// Backend is the engine; emulate runs gpuplane's emulated engine (no GPU
	// needed), for trying the controller out.
	// +kubebuilder:validation:Enum=vllm;sglang;trtllm;emulate
	// +kubebuilder:default=vllm
	// +optional
	Backend string `json:"backend,omitempty"`
	// Precision of weights (and optionally the KV cache), e.g. fp8 or fp8/bf16;
	// empty takes the checkpoint's.
	// +kubebuilder:validation:Pattern=`^(bf16|fp16|fp8|int8|w4a16|fp4)(/(bf16|fp16|fp8))?$`
	// +optional
	Precision string `json:"precision,omitempty"`
	// Image overrides the engine's image (pinned by tag or digest).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
	// HFTokenSecret names a Secret whose key HF_TOKEN the workers read.
	// +optional
	HFTokenSecret string `json:"hfTokenSecret,omitempty"`
	// Speculative turns on speculative decoding in the decoding workers:
	// the plan is sized for it and the workers run the draft.
	// +optional
	Speculative *SpeculativeSpec `json:"speculative,omitempty"`
}

// SpeculativeSpec is the draft the decoding workers run (MTP layers of the
// model, or an EAGLE-3 draft model).
type SpeculativeSpec struct {
	// Tokens is how many tokens are drafted per decode step.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Tokens int32 `json:"tokens"`
	// AcceptanceLength is the mean tokens a sequence gains per step, 1 to
	// tokens+1 (the engine's logged mean acceptance length), e.g. "2.4".
	AcceptanceLength resource.Quantity `json:"acceptanceLength"`
	// Draft is an EAGLE-3 draft model; empty: the model's own MTP layers.
	// +kubebuilder:validation:MaxLength=200
	// +optional
	Draft string `json:"draft,omitempty"`
}

// SLOSpec is the latency target.
// +kubebuilder:validation:XValidation:rule="self.ttftMilliseconds > 0 || self.itlMilliseconds > 0",message="slo: give ttftMilliseconds or itlMilliseconds (or both)"
type SLOSpec struct {
	// TTFTMilliseconds is the time to first token; 0 means no limit.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600000
	// +optional
	TTFTMilliseconds int32 `json:"ttftMilliseconds,omitempty"`
	// ITLMilliseconds is the inter-token latency; 0 means no limit.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60000
	// +optional
	ITLMilliseconds int32 `json:"itlMilliseconds,omitempty"`
	// Percentile judged, as configure's --ttft-percentile and
	// --itl-percentile: "mean" (default) or p50 to p99.9, e.g. "p90".
	// +kubebuilder:validation:Pattern=`^(mean|p(5[0-9]|[6-9][0-9])(\.[0-9])?)$`
	// +kubebuilder:default=mean
	// +optional
	Percentile string `json:"percentile,omitempty"`
}

// TrafficSpec is the expected requests.
// +kubebuilder:validation:XValidation:rule="!(has(self.requestsPerSecond) && has(self.users))",message="traffic: give requestsPerSecond or users, not both"
type TrafficSpec struct {
	// InputTokens and OutputTokens are the mean prompt and answer lengths.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	InputTokens int32 `json:"inputTokens"`
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1048576
	OutputTokens int32 `json:"outputTokens"`
	// RequestsPerSecond is the expected rate (e.g. "2.5"); with it the
	// deployment is sized to that load, without it to the best throughput
	// the budget allows.
	// +optional
	RequestsPerSecond *resource.Quantity `json:"requestsPerSecond,omitempty"`
	// Users is the expected number of concurrent users, instead of a rate.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Users int32 `json:"users,omitempty"`
}

// DeviceSpec says which devices the deployment may use.
type DeviceSpec struct {
	// Classes are DeviceClass names whose devices may be used (default:
	// gpu.gpuplane.io, mig.gpuplane.io and vgpu.gpuplane.io, or
	// gpu.nvidia.com and mig.nvidia.com with driver nvidia).
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	Classes []string `json:"classes,omitempty"`
	// Selector is a CEL expression over a device (as in a ResourceClaim)
	// that every used device must satisfy.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Selector string `json:"selector,omitempty"`
	// Driver whose attribute names the claims use.
	// +kubebuilder:validation:Enum=gpuplane;nvidia
	// +kubebuilder:default=gpuplane
	// +optional
	Driver string `json:"driver,omitempty"`
}

// BudgetSpec bounds the deployment.
type BudgetSpec struct {
	// MaxGPUs is the most physical GPUs the deployment may occupy, at plan
	// time and when the planner scales (0: what is free).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	// +optional
	MaxGPUs int32 `json:"maxGPUs,omitempty"`
}

// PlannerSpec sets the SLO planner.
type PlannerSpec struct {
	// Mode: auto scales the pools, advisory only reports what it would
	// do, off keeps the planned replicas.
	// +kubebuilder:validation:Enum=auto;advisory;off
	// +kubebuilder:default=auto
	// +optional
	Mode string `json:"mode,omitempty"`
	// IntervalSeconds between planner ticks.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=30
	// +optional
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`
	// StartupSeconds is how long a new worker takes to serve (model load).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7200
	// +kubebuilder:default=120
	// +optional
	StartupSeconds int32 `json:"startupSeconds,omitempty"`
	// ScaleDownSeconds is how long a pool waits after any scale event, and
	// how long the need must have gone, before it shrinks (default 180).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	ScaleDownSeconds *int32 `json:"scaleDownSeconds,omitempty"`
	// MaxPrefill and MaxDecode cap each pool (0: the budget decides).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MaxPrefill int32 `json:"maxPrefill,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MaxDecode int32 `json:"maxDecode,omitempty"`
}

// ServingSpec shapes the objects the controller creates.
type ServingSpec struct {
	// Modes limits the search to agg or disagg (default: both).
	// +kubebuilder:validation:items:Enum=agg;disagg
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	// +optional
	Modes []string `json:"modes,omitempty"`
	// ModelCacheClaim is a PersistentVolumeClaim mounted at the model cache
	// (default: an emptyDir).
	// +optional
	ModelCacheClaim string `json:"modelCacheClaim,omitempty"`
	// NodeSelector is added to the workers' pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Dynamo, when true, also writes the plan as a Dynamo
	// DynamoGraphDeployment into a ConfigMap <name>-dynamo.
	// +optional
	Dynamo bool `json:"dynamo,omitempty"`
}

// ServingDeploymentStatus is what the controller planned and sees.
type ServingDeploymentStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Planned, Deployed, Ready, SLOMet.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Plan is the configuration chosen.
	// +optional
	Plan *Plan `json:"plan,omitempty"`
	// Replicas is the pools' sizes.
	// +optional
	Replicas *Replicas `json:"replicas,omitempty"`
	// Observed is the latency the planner last measured.
	// +optional
	Observed *Observed `json:"observed,omitempty"`
	// Decisions are the planner's latest decisions, newest last (at most 10).
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Decisions []Decision `json:"decisions,omitempty"`
	// Devices summarises the free devices the plan was made from.
	// +optional
	Devices string `json:"devices,omitempty"`
	// Endpoint is the Service that takes OpenAI-compatible requests.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
}

// Plan is configure's choice.
type Plan struct {
	// Mode is agg or disagg.
	Mode string `json:"mode"`
	// Device is the device kind, e.g. h100_sxm or h100_sxm:3g.40gb.
	Device string `json:"device"`
	// Pools are the worker pools: role, TP, workers, batch.
	Pools []PoolPlan `json:"pools"`
	// Predicted latency at the judged statistic, with the throughput.
	TTFT            string `json:"ttft"`
	ITL             string `json:"itl"`
	TokensPerSecond string `json:"tokensPerSecond"`
	// GPUs is the physical GPUs the plan occupies.
	GPUs string `json:"gpus"`
	// Binding is what limits the plan.
	Binding string `json:"binding,omitempty"`
}

// PoolPlan is one pool of the plan.
type PoolPlan struct {
	Role   string `json:"role"`
	Device string `json:"device"`
	TP     int32  `json:"tp"`
	// PP is pipeline stages (pods on nodes of their own), EP the GPUs the
	// experts spread over and DP the attention-DP ranks of a worker; unset
	// means 1.
	PP      int32 `json:"pp,omitempty"`
	EP      int32 `json:"ep,omitempty"`
	DP      int32 `json:"dp,omitempty"`
	Workers int32 `json:"workers"`
	Batch   int32 `json:"batch"`
}

// Replicas are ready over desired (what the controller or planner set) per pool.
type Replicas struct {
	// Summary is all pools in one line, e.g. "P 2/2 D 1/1" or "agg 3/3".
	Summary string `json:"summary,omitempty"`
	Prefill string `json:"prefill,omitempty"`
	Decode  string `json:"decode,omitempty"`
	Agg     string `json:"agg,omitempty"`
}

// Observed latency over the planner's last interval.
type Observed struct {
	TTFT              string      `json:"ttft,omitempty"`
	ITL               string      `json:"itl,omitempty"`
	RequestsPerSecond string      `json:"requestsPerSecond,omitempty"`
	Time              metav1.Time `json:"time,omitempty"`
}

// Decision is one planner decision.
type Decision struct {
	Time    metav1.Time `json:"time"`
	Prefill int32       `json:"prefill"`
	Decode  int32       `json:"decode"`
	// Outcome: scaled, advised, unchanged, held or failed.
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}
