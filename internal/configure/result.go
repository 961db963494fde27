package configure

import "github.com/gpuplane/gpuplane/internal/estimate"

// Pool is one worker pool of a deployment.
type Pool struct {
	Role   string `json:"role"` // agg, prefill or decode
	Device string `json:"device"`
	TP     int    `json:"tp"`
	PP     int    `json:"pp,omitempty"`
	EP     int    `json:"ep,omitempty"`
	// DP > 1 makes each worker DP attention-DP ranks of TP GPUs.
	DP int `json:"dp,omitempty"`
	// Workers is the number of replicas; GPUsPerWorker the devices each one claims.
	Workers       int `json:"workers"`
	GPUsPerWorker int `json:"gpus_per_worker"`
	// Batch is the requests one worker has in flight at the operating point.
	Batch int `json:"batch"`
	// CapacityRPS is the request rate one worker serves within the SLO.
	CapacityRPS float64 `json:"capacity_requests_per_s"`
	// Limit is what stops one worker from taking more.
	Limit string `json:"limit"`
}

// Config is one candidate deployment and its predicted performance.
type Config struct {
	Rank    int    `json:"rank,omitempty"`
	Mode    string `json:"mode"`
	Agg     *Pool  `json:"agg,omitempty"`
	Prefill *Pool  `json:"prefill,omitempty"`
	Decode  *Pool  `json:"decode,omitempty"`
	// GPUs counts the physical GPUs the devices occupy under the placement
	// rules (two 3g.40gb fill an H100; three A10 halves occupy two A10s);
	// GPUEquivalents their share of GPU compute (a 1/2 vGPU is 0.5);
	// Devices what the pods claim.
	GPUs           float64 `json:"gpus"`
	GPUEquivalents float64 `json:"gpu_equivalents"`
	Devices        int     `json:"devices"`
	CostPerHour    float64 `json:"cost_per_hour,omitempty"`
	// Concurrency is the users the deployment holds at once at this operating point.
	Concurrency  int     `json:"concurrency"`
	RequestsPerS float64 `json:"requests_per_s"`
	// TTFTms and ITLms are the statistics the SLA judges (its percentiles,
	// or the means); the others are reported beside them.
	TTFTms            float64 `json:"ttft_ms"`
	ITLms             float64 `json:"itl_ms"`
	TTFTMeanms        float64 `json:"ttft_mean_ms"`
	TTFTP90ms         float64 `json:"ttft_p90_ms"`
	TTFTP99ms         float64 `json:"ttft_p99_ms"`
	ITLMeanms         float64 `json:"itl_mean_ms"`
	ITLP90ms          float64 `json:"itl_p90_ms"`
	ITLP99ms          float64 `json:"itl_p99_ms"`
	E2Ems             float64 `json:"e2e_ms"`
	TokensPerS        float64 `json:"tokens_per_s"`
	TokensPerSPerGPU  float64 `json:"tokens_per_s_per_gpu"`
	TokensPerSPerUser float64 `json:"tokens_per_s_per_user"`
	// TokensPerDollar is output tokens per unit of price (priced pools only).
	TokensPerDollar float64 `json:"tokens_per_dollar,omitempty"`
	KVTransferMs    float64 `json:"kv_transfer_ms,omitempty"`
	MeetsSLO        bool    `json:"meets_slo"`
	// Copies > 1: the deployment is that many identical units behind one
	// router, and the unit alone was simulated (pools larger than a unit).
	Copies int `json:"copies,omitempty"`
	// Binding is the limit that caps this deployment; Why says why it ranks where it does.
	Binding string `json:"binding"`
	Why     string `json:"why,omitempty"`
	// DecodeStep is where a decode step's time goes at the operating
	// point: the mean decoding batch per engine of the agg or decode pool
	// (the winner's explanation quotes it).
	DecodeStep *estimate.StepShare `json:"decode_step,omitempty"`
}

// ParetoPoint is one operating point on the throughput/interactivity plane.
type ParetoPoint struct {
	Mode              string  `json:"mode"`
	Label             string  `json:"label"`
	TokensPerSPerGPU  float64 `json:"tokens_per_s_per_gpu"`
	TokensPerSPerUser float64 `json:"tokens_per_s_per_user"`
	TTFTms            float64 `json:"ttft_ms"`
	ITLms             float64 `json:"itl_ms"`
	MeetsSLO          bool    `json:"meets_slo"`
}

// Rejected is an engine that cannot serve at all, and why.
type Rejected struct {
	Engine string `json:"engine"`
	Role   string `json:"role"`
	Reason string `json:"reason"`
}

// Miss says how far the best achievable latency is from an unreachable SLO.
type Miss struct {
	BestTTFTms float64 `json:"best_ttft_ms"`
	BestITLms  float64 `json:"best_itl_ms"`
	BestE2Ems  float64 `json:"best_e2e_ms"`
	Message    string  `json:"message"`
}

// Engines are the planner's units in autoscale mode.
type Engines struct {
	Prefill *Pool `json:"prefill"`
	Decode  *Pool `json:"decode"`
}

// Result is a finished search.
type Result struct {
	Model string `json:"model"`
	// Checkpoint is the model as requested (e.g. a published FP8 checkpoint), what workers load.
	Checkpoint string `json:"checkpoint"`
	Backend    string `json:"backend"`
	Precision  string `json:"precision"`
	ISL        int    `json:"isl"`
	OSL        int    `json:"osl"`
	SLA        SLA    `json:"sla"`
	// SpecTokens and SpecAccept are the speculative decoding every
	// candidate was priced with (0: none).
	SpecTokens int     `json:"spec_tokens,omitempty"`
	SpecAccept float64 `json:"spec_accept,omitempty"`
	// Confidence and SLAAtConfidence: with a confidence, the targets the
	// predictions were held to so that measured runs meet SLA that often.
	Confidence      float64 `json:"confidence,omitempty"`
	SLAAtConfidence *SLA    `json:"sla_at_confidence,omitempty"`
	// Judged names the statistics the SLA judges, e.g. "ttft p90, itl mean".
	Judged     string        `json:"judged"`
	Pick       Pick          `json:"pick"`
	Load       float64       `json:"request_rate,omitempty"`
	Users      int           `json:"concurrency,omitempty"`
	Best       *Config       `json:"best"`
	Candidates []Config      `json:"candidates"`
	Pareto     []ParetoPoint `json:"pareto"`
	// CandidatesEvaluated counts deployments scored (engine combinations x
	// worker counts); Simulations the engine runs behind them.
	CandidatesEvaluated int        `json:"candidates_evaluated"`
	Simulations         int        `json:"simulations"`
	Engines             *Engines   `json:"engines,omitempty"`
	Unreachable         *Miss      `json:"unreachable,omitempty"`
	Rejected            []Rejected `json:"rejected,omitempty"`
	Explain             []string   `json:"explain,omitempty"`
	// Notes say where the answer rests on something the request did not
	// check (a request longer than the model's context).
	Notes []string `json:"notes,omitempty"`
	// Curve holds every measured point, for the report's Pareto plot.
	Curve []ParetoPoint `json:"-"`
}
