package perf

import (
	"fmt"
	"strings"
)

// Admission is how an engine takes a request into its KV cache.
type Admission string

const (
	// AdmitWhole sets aside a request's prompt and every output token it
	// may produce when it is admitted, and never evicts one: TensorRT-LLM's
	// GUARANTEED_NO_EVICT capacity policy, its default.
	AdmitWhole Admission = "whole"
	// AdmitOnDemand allocates blocks as tokens are computed and evicts the
	// newest request when a decode step would overflow: vLLM, SGLang, and
	// TensorRT-LLM's MAX_UTILIZATION.
	AdmitOnDemand Admission = "on-demand"
)

// ParseAdmission reads an admission name; empty means the backend's own
// (BackendParams.ReserveFullRequest).
func ParseAdmission(s string) (Admission, error) {
	switch a := Admission(strings.ToLower(strings.TrimSpace(s))); a {
	case "", AdmitWhole, AdmitOnDemand:
		return a, nil
	}
	return "", fmt.Errorf("%q is not a KV admission; use %s (reserve each request's prompt and output, never evict: TensorRT-LLM's default) or %s (allocate as tokens come, evict when full: vLLM, SGLang)",
		s, AdmitWhole, AdmitOnDemand)
}
