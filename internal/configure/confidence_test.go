package configure

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// At a confidence the predictions are held to tighter targets: the ones
// a prediction of its kind stays under that often, and the pick meets them.
func TestConfidenceTightensTheSLA(t *testing.T) {
	plain := mustSearch(t, reference())
	r := reference()
	r.Confidence = 0.9
	res := mustSearch(t, r)
	c := res.SLAAtConfidence
	if c == nil || res.Confidence != 0.9 || res.SLA != reference().SLA {
		t.Fatalf("result: SLA %+v, confidence %g, at confidence %+v", res.SLA, res.Confidence, c)
	}
	// The vLLM dense spread (both modes take the aggregated one) at 0.9 is its P90.
	k := perf.MustDefaultParams().Intervals.For(perf.IntervalKey(perf.VLLM, false, "agg"))
	if want := r.SLA.ITLms / k.TPOT.P90; c.ITLms > want*1.0001 || c.ITLms < want*0.9999 {
		t.Errorf("ITL at confidence %.3f ms, want %g / %.3f = %.3f", c.ITLms, r.SLA.ITLms, k.TPOT.P90, want)
	}
	if c.TTFTms >= r.SLA.TTFTms || c.ITLms >= r.SLA.ITLms {
		t.Errorf("targets at confidence %+v should be tighter than %+v", c, r.SLA)
	}
	if res.Best == nil || res.Best.ITLms > c.ITLms || res.Best.TTFTms > c.TTFTms {
		t.Fatalf("best %+v should meet %+v", res.Best, c)
	}
	if plain.Best.ITLms <= c.ITLms || res.Best.TokensPerSPerGPU >= plain.Best.TokensPerSPerGPU {
		t.Errorf("the plain pick (ITL %.1f ms, %.0f tok/s/GPU) should not meet the tighter target, and the confident pick (%.0f tok/s/GPU) should give up throughput",
			plain.Best.ITLms, plain.Best.TokensPerSPerGPU, res.Best.TokensPerSPerGPU)
	}
}

func TestConfidenceErrors(t *testing.T) {
	r := reference()
	r.Confidence = 1.5
	if _, err := Search(testEnv(), r, Options{}); err == nil || !strings.Contains(err.Error(), "confidence: 1.5") {
		t.Errorf("confidence 1.5: %v", err)
	}
	env := testEnv()
	env.Params = env.Params.Clone()
	env.Params.Intervals = nil
	r.Confidence = 0.9
	if _, err := Search(env, r, Options{}); err == nil || !strings.Contains(err.Error(), "no held-out spread for vllm/dense-agg") {
		t.Errorf("no intervals: %v", err)
	}
}
