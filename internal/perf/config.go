// Package perf is gpuplane's analytic performance model: the time of one
// engine iteration from its batch composition, and the memory a worker needs.
// It is pure: no I/O, no clock.
package perf

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// Backend is a serving engine.
type Backend string

// Supported backends.
const (
	VLLM   Backend = "vllm"
	SGLang Backend = "sglang"
	TRTLLM Backend = "trtllm"
)

// Backends lists the supported backends.
var Backends = []Backend{VLLM, SGLang, TRTLLM}

// ParseBackend accepts the backends' common spellings.
func ParseBackend(s string) (Backend, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "vllm":
		return VLLM, nil
	case "sglang":
		return SGLang, nil
	case "trtllm", "tensorrt-llm", "tensorrt_llm", "trt-llm":
		return TRTLLM, nil
	}
	return "", fmt.Errorf("unknown backend %q: use vllm, sglang or trtllm", s)
}

// maxDP bounds attention data parallelism: eight NVL72 domains' worth.
const maxDP = 1024

// Config is one serving worker: a model on TP x PP devices of one kind.
type Config struct {
	Model   *catalog.Model
	Device  catalog.Device
	Backend Backend
	// Weights is the precision of the linear layers; KV that of the cache.
	Weights catalog.Precision
	KV      catalog.Precision
	TP, PP  int
	// EP > 1 distributes experts over EP ranks (all-to-all) instead of splitting each expert by TP.
	EP int
	// DP > 1 is attention data parallelism: this worker is one of DP
	// ranks of TP x PP GPUs that each run attention on their own requests
	// and cache, while the MoE layers spread over all TP x DP GPUs.
	DP int
	// MaxBatchedTokens and MaxSeqs override the backend defaults when > 0.
	MaxBatchedTokens int
	MaxSeqs          int
	// MemoryUtilization overrides the backend default when > 0.
	MemoryUtilization float64
	// SpecTokens > 0 turns on speculative decoding (MTP, EAGLE or a draft
	// head): each decode step drafts SpecTokens tokens a sequence, one
	// draft layer pass each, and the target verifies them in one step.
	// SpecAccept is the mean tokens a sequence gains per step (accepted
	// drafts plus the target's own), 1 to SpecTokens+1: the engines'
	// "mean acceptance length".
	SpecTokens int
	SpecAccept float64
	// Admission is how the engine admits requests into its KV cache;
	// empty takes the backend's (normalise fills it in).
	Admission Admission
	// DPFromTP is set by normalise when TP did not divide an MoE model's
	// attention heads and was read as TensorRT-LLM and SGLang read their
	// tp under attention DP: the worker's GPU count, with attention data
	// parallel on every GPU (DP = TP, TP = 1) and the experts over all.
	DPFromTP bool
}

// GPUs is the number of devices one worker (one attention-DP rank) uses.
func (c *Config) GPUs() int { return c.TP * c.PP }

// WorkerGPUs is the number of devices a whole worker uses: all its
// attention-DP ranks.
func (c *Config) WorkerGPUs() int { return c.GPUs() * max(c.DP, 1) }

func (c *Config) normalise(p *Params) error {
	if c.Model == nil || c.Device.GPU == nil {
		return fmt.Errorf("config: model and device are required")
	}
	if c.Backend == "" {
		c.Backend = VLLM
	}
	bp, ok := p.Backends[c.Backend]
	if !ok {
		return fmt.Errorf("backend %q has no parameters", c.Backend)
	}
	a, err := ParseAdmission(string(c.Admission))
	if err != nil {
		return fmt.Errorf("kv admission: %w", err)
	}
	c.Admission = a
	if c.Admission == "" {
		c.Admission = AdmitOnDemand
		if bp.ReserveFullRequest {
			c.Admission = AdmitWhole
		}
	}
	if c.Weights == "" {
		c.Weights = c.Model.NativeDtype
		if c.Weights == "" {
			c.Weights = catalog.BF16
		}
	}
	if c.KV == "" {
		c.KV = catalog.BF16
		if bp.KVFollowsWeights && (c.Weights == catalog.FP8 || c.Weights == catalog.FP4) {
			c.KV = catalog.FP8
		}
	}
	if !c.KV.CacheFormat() {
		return fmt.Errorf("kv_precision: %s is not a KV-cache format; use bf16, fp8 or int8", c.KV)
	}
	if c.TP == 0 {
		c.TP = 1
	}
	if c.PP == 0 {
		c.PP = 1
	}
	if c.EP == 0 {
		c.EP = 1
	}
	if c.DP == 0 {
		c.DP = 1
	}
	if c.Model.MoE != nil && c.DP == 1 && c.TP > 1 && c.TP <= maxDP && c.Model.AttentionHeads%c.TP != 0 {
		// No engine splits attention heads unevenly; an MoE deployment
		// that names more GPUs than the heads divide into runs attention
		// data-parallel, and moves tokens to the experts across all of them.
		c.DP, c.TP, c.DPFromTP = c.TP, 1, true
		if c.EP <= 1 {
			c.EP = c.DP
		}
	}
	switch {
	case c.DPFromTP && c.EP > c.Model.MoE.Experts:
		return fmt.Errorf("tp: %d does not divide the model's %d attention heads, and as %d attention-DP ranks with the experts spread over all of them it exceeds the %d experts; give tp (a divisor of the heads), dp and ep (at most %d) instead",
			c.DP, c.Model.AttentionHeads, c.DP, c.Model.MoE.Experts, c.Model.MoE.Experts)
	case c.TP < 1:
		return fmt.Errorf("tp: %d must be >= 1", c.TP)
	case c.PP < 1:
		return fmt.Errorf("pp: %d must be >= 1", c.PP)
	case c.PP > c.Model.Layers:
		return fmt.Errorf("pp: %d exceeds the model's %d layers", c.PP, c.Model.Layers)
	case c.DP < 1 || c.DP > maxDP:
		return fmt.Errorf("dp: %d must be 1 to %d", c.DP, maxDP)
	case c.EP < 1 || (c.TP*c.DP)%c.EP != 0:
		return fmt.Errorf("ep: %d must divide tp x dp (%d), the GPUs the experts spread over", c.EP, c.TP*c.DP)
	case c.EP > 1 && c.Model.MoE == nil:
		return fmt.Errorf("ep: %d needs a mixture-of-experts model; %s is dense", c.EP, c.Model.Name)
	case c.Model.MoE != nil && c.EP > c.Model.MoE.Experts:
		return fmt.Errorf("ep: %d exceeds the %d experts; use at most %d expert-parallel ranks", c.EP, c.Model.MoE.Experts, c.Model.MoE.Experts)
	}
	if err := CheckSpec(c.SpecTokens, c.SpecAccept); err != nil {
		return err
	}
	if !c.Device.Whole() && c.TP*c.PP*c.DP > 1 {
		return fmt.Errorf("tp x pp x dp = %d on %s: slices (MIG, vGPU) have no peer-to-peer links, so a worker on slices must use tp=1 pp=1 dp=1", c.TP*c.PP*c.DP, c.Device.Name())
	}
	// Tensor parallelism past one NVLink domain runs its all-reduces over
	// the scale-out (RDMA) network of NVLink systems, in whole domains.
	if g := c.Device.GPU; c.TP > g.MaxTP() {
		switch dom := g.MaxTP(); {
		case !g.HasNVLink():
			return fmt.Errorf("tp: %d exceeds the %d GPUs a %s node has; use pp across nodes", c.TP, dom, g.Name)
		case c.TP%dom != 0:
			return fmt.Errorf("tp: %d spans %s NVLink domains of %d GPUs only in whole domains; use a multiple of %d, or pp across nodes", c.TP, g.Name, dom, dom)
		}
	}
	if heads := c.Model.AttentionHeads; heads%c.TP != 0 {
		// Engines split attention heads evenly; wider groups shard the
		// experts and run attention data-parallel.
		return fmt.Errorf("tp: %d must divide the model's %d attention heads (tp %s); for more GPUs per worker, give attention data parallelism: tp x dp GPUs, with ep for the experts",
			c.TP, heads, divisorsUpTo(heads, 16))
	}
	if kv := c.Model.KVHeads; c.Model.MLA == nil && kv > 0 && kv%c.TP != 0 && c.TP%kv != 0 {
		// KV heads are split evenly, or each replicated on tp/kv ranks.
		return fmt.Errorf("tp: %d must divide the model's %d KV heads or be a multiple of them", c.TP, kv)
	}
	small := bp.SmallDeviceGiB > 0 && c.Device.MemoryGiB < bp.SmallDeviceGiB
	if c.MaxBatchedTokens == 0 {
		c.MaxBatchedTokens = bp.MaxBatchedTokens
		if small && bp.SmallDeviceMaxBatchedTokens > 0 {
			c.MaxBatchedTokens = bp.SmallDeviceMaxBatchedTokens
		}
	}
	if c.MaxSeqs == 0 {
		c.MaxSeqs = bp.MaxSeqs
		if small && bp.SmallDeviceMaxSeqs > 0 {
			c.MaxSeqs = bp.SmallDeviceMaxSeqs
		}
	}
	if c.MemoryUtilization == 0 {
		c.MemoryUtilization = bp.MemoryUtilization
	}
	if c.MaxBatchedTokens < 1 {
		return fmt.Errorf("max-batched-tokens: %d must be >= 1 (0: the backend's default)", c.MaxBatchedTokens)
	}
	if c.MaxSeqs < 1 {
		return fmt.Errorf("max-seqs: %d must be >= 1 (0: the backend's default)", c.MaxSeqs)
	}
	if c.MemoryUtilization <= 0 || c.MemoryUtilization > 1 {
		return fmt.Errorf("gpu-memory-utilization: %g must be in (0, 1]", c.MemoryUtilization)
	}
	return nil
}

// divisorsUpTo lists n's divisors, at most max of them, for an error message.
func divisorsUpTo(n, most int) string {
	var ds []string
	for d := 1; d <= n && len(ds) < most; d++ {
		if n%d == 0 {
			ds = append(ds, strconv.Itoa(d))
		}
	}
	return strings.Join(ds, ", ")
}

// MaxSpecTokens bounds the drafted tokens per step; engines draft a few.
const MaxSpecTokens = 16

// CheckSpec validates speculative decoding's drafted tokens k and mean
// acceptance length a. The acceptance length is the user's to give: it
// depends on the draft, the model and the traffic, and a default would be
// a guess.
func CheckSpec(k int, a float64) error {
	switch {
	case k < 0 || k > MaxSpecTokens:
		return fmt.Errorf("spec_tokens: %d must be 0 (no speculative decoding) to %d drafted tokens a step", k, MaxSpecTokens)
	case k == 0 && a != 0:
		return fmt.Errorf("spec_accept: %g needs spec_tokens, the tokens drafted a step (MTP or EAGLE: often 1 to 3)", a)
	case k > 0 && a == 0:
		return fmt.Errorf("spec_accept: required with spec_tokens %d: the mean tokens a sequence gains per decode step (1 to %d), which vLLM and SGLang log as the mean acceptance length", k, k+1)
	case k > 0 && (math.IsNaN(a) || a < 1 || a > float64(k+1)):
		return fmt.Errorf("spec_accept: %g must be 1 to spec_tokens+1 (%d): the mean tokens a sequence gains per decode step, which vLLM and SGLang log as the mean acceptance length", a, k+1)
	}
	return nil
}
