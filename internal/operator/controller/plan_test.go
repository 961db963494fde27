package controller

import (
	"testing"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/operator/plan"
)

// A plan of attention-DP or expert-parallel workers keeps its shape from
// configure's pick through the status to the objects the controller
// applies, and a change of shape alone changes the plan's key.
func TestPlanKeepsParallelism(t *testing.T) {
	pick := configure.Config{Mode: "agg", Agg: &configure.Pool{Role: "agg", Device: "b200_sxm", TP: 1, EP: 8, DP: 8,
		Workers: 2, GPUsPerWorker: 8, Batch: 2048}}
	c := config(plan.Status(&configure.Result{Best: &pick}))
	if c.Agg == nil || c.Agg.TP != 1 || c.Agg.EP != 8 || c.Agg.DP != 8 || c.Agg.GPUsPerWorker != 8 || c.Agg.Workers != 2 {
		t.Fatalf("applied pool %+v, want the picked %+v", c.Agg, pick.Agg)
	}
	tp8 := v1alpha1.Plan{Mode: "agg", Pools: []v1alpha1.PoolPlan{{Role: "agg", Device: "b200_sxm", TP: 8, EP: 8, Workers: 2, Batch: 2048}}}
	dp8 := v1alpha1.Plan{Mode: "agg", Pools: []v1alpha1.PoolPlan{{Role: "agg", Device: "b200_sxm", TP: 1, EP: 8, DP: 8, Workers: 2, Batch: 2048}}}
	if planKey(&tp8) == planKey(&dp8) {
		t.Errorf("tp8 and dp8 plans share the key %q", planKey(&tp8))
	}
	if got, want := describe(&dp8), "agg 2 x b200_sxm tp1 dp8 ep8"; got != want {
		t.Errorf("describe: %q, want %q", got, want)
	}
}
