package serving

import "github.com/gpuplane/gpuplane/internal/engine"

// stepGroups is what the loop advances for engines that are consecutive
// runs of dp attention-DP ranks: a lockstep group per worker (see
// engine.Lockstep), or the engines themselves when dp is 1. Groups
// fast-forward decode-only runs unless plain.
func stepGroups(engines []*engine.Engine, dp int, plain bool) []stepper {
	var out []stepper
	if dp <= 1 {
		for _, e := range engines {
			out = append(out, e)
		}
		return out
	}
	for i := 0; i < len(engines); i += dp {
		out = append(out, engine.NewLockstep(engines[i:min(i+dp, len(engines))], !plain))
	}
	return out
}
