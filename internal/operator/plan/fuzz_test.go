package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/configure"
)

// FuzzRequest: any spec the API server could hand over (the schema's
// rules are not assumed) becomes a request or an error naming a field;
// nothing panics.
func FuzzRequest(f *testing.F) {
	f.Add(`{"model":{"name":"Qwen/Qwen3-32B-FP8"},"slo":{"ttftMilliseconds":500,"itlMilliseconds":30,"percentile":"p90"},"traffic":{"inputTokens":4000,"outputTokens":500,"requestsPerSecond":"0.5"}}`)
	f.Add(`{"model":{"name":""},"slo":{"percentile":"p1e9"},"traffic":{"inputTokens":-1,"outputTokens":0,"users":-5}}`)
	f.Add(`{"engine":{"precision":"fp8/"},"slo":{"ttftMilliseconds":-1},"traffic":{"requestsPerSecond":"-2"}}`)
	f.Add(`{"model":{"name":"Qwen/Qwen3-32B"},"engine":{"speculative":{"tokens":3,"acceptanceLength":"9e999999"}},"slo":{"itlMilliseconds":30},"traffic":{"inputTokens":4000,"outputTokens":500}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var spec v1alpha1.ServingDeploymentSpec
		if err := json.Unmarshal([]byte(s), &spec); err != nil {
			return
		}
		_, err := Request(&spec, []configure.PoolEntry{{Device: "h100_sxm", Count: 8}}, 8)
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Fatal("empty error")
		}
	})
}
