// Package examples embeds the example files that commands run by default,
// so `gpuplane demo` works from any directory.
package examples

import _ "embed"

// PlannerBurst is examples/planner-burst.yaml, the planner reference scenario.
//
//go:embed planner-burst.yaml
var PlannerBurst []byte
