package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuplane/gpuplane/api/v1alpha1"
	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/operator/devicepool"
	"github.com/gpuplane/gpuplane/internal/operator/plan"
)

// DefaultClasses are the DeviceClasses a spec without devices.classes may use.
func DefaultClasses(driver string) []string {
	if driver == "nvidia" {
		return []string{"gpu.nvidia.com", "mig.nvidia.com"}
	}
	return []string{"gpu.gpuplane.io", "mig.gpuplane.io", "vgpu.gpuplane.io"}
}

// plan searches for a deployment on the free devices and records it (or
// why there is none) in st. It returns false when the object cannot be
// deployed as it stands; errors are the API's.
func (r *Reconciler) plan(ctx context.Context, sd *v1alpha1.ServingDeployment, st *v1alpha1.ServingDeploymentStatus) (bool, error) {
	start := time.Now()
	defer func() { r.metrics.plan.Observe(time.Since(start).Seconds()) }()
	fail := func(reason, msg string) (bool, error) {
		log.FromContext(ctx).Info("not planned", "reason", reason, "message", msg)
		if c := findCond(st, CondPlanned); c == nil || c.Message != msg {
			r.Recorder.Eventf(sd, nil, corev1.EventTypeWarning, reason, "Plan", "%s", msg)
		}
		setCond(st, sd.Generation, CondPlanned, false, reason, msg)
		return false, nil
	}
	env, err := r.envFor(ctx, sd)
	if err != nil {
		return fail("InvalidModel", err.Error())
	}
	snap, err := r.snapshot(ctx, sd)
	if err != nil {
		return false, err
	}
	classes := sd.Spec.Devices.Classes
	if len(classes) == 0 {
		classes = DefaultClasses(sd.Spec.Devices.Driver)
	}
	pool, err := devicepool.Build(ctx, env.Catalog, snap, devicepool.Filter{Classes: classes, Selector: sd.Spec.Devices.Selector,
		NodeSelector: sd.Spec.Serving.NodeSelector, ClassesField: "spec.devices.classes", SelectorField: "spec.devices.selector"})
	if err != nil {
		return fail("InvalidDevices", err.Error())
	}
	st.Devices = pool.String()
	if len(pool.Kinds) == 0 {
		return fail("NoMatchingDevices", fmt.Sprintf("no free device matches spec.devices (classes %v, selector %q) on the nodes of spec.serving.nodeSelector %v; %s",
			classes, sd.Spec.Devices.Selector, sd.Spec.Serving.NodeSelector, skippedText(pool)))
	}
	maxGPUs := pool.GPUs
	if b := int(sd.Spec.Budget.MaxGPUs); b > 0 && b < maxGPUs {
		maxGPUs = b
	}
	req, err := plan.Request(&sd.Spec, pool.Entries(), maxGPUs)
	if err != nil {
		return fail("InvalidSpec", err.Error())
	}
	res, err := configure.Search(env, req, configure.Options{})
	if err != nil {
		return fail("InvalidSpec", err.Error())
	}
	if res.Best == nil || !res.Best.MeetsSLO {
		return fail("SLOUnreachable", plan.Unmet(res))
	}
	for _, pool := range []*configure.Pool{res.Best.Agg, res.Best.Prefill, res.Best.Decode} {
		if pool != nil && pool.PP > 1 {
			return fail("Unsupported", fmt.Sprintf("the best plan runs its %s workers across nodes (pipeline parallel %d), which the controller does not deploy yet; limit spec.budget.maxGPUs or deploy `gpuplane configure --emit k8s` by hand", pool.Role, pool.PP))
		}
	}
	p := plan.Status(res)
	// The objects must build (precision flags, images) before the plan is taken.
	if _, err := r.objects(sd, p); err != nil {
		return fail("InvalidSpec", err.Error())
	}
	changed := st.Plan == nil || planKey(st.Plan) != planKey(p)
	st.Plan = p
	msg := fmt.Sprintf("%s; predicted TTFT %s, ITL %s, %s tokens/s on %s GPUs", describe(p), p.TTFT, p.ITL, p.TokensPerSecond, p.GPUs)
	setCond(st, sd.Generation, CondPlanned, true, "Planned", msg)
	if changed {
		r.Recorder.Eventf(sd, nil, corev1.EventTypeNormal, "Planned", "Plan", "%s", msg)
		log.FromContext(ctx).Info("planned", "plan", describe(p), "ttft", p.TTFT, "itl", p.ITL, "gpus", p.GPUs, "devices", st.Devices)
	}
	return true, nil
}

// envFor is the shared catalog, or a copy with the model of the spec's
// ConfigMap added.
func (r *Reconciler) envFor(ctx context.Context, sd *v1alpha1.ServingDeployment) (estimate.Env, error) {
	ref := sd.Spec.Model.ConfigMap
	if ref == nil {
		if _, err := r.Env.Catalog.Model(sd.Spec.Model.Name); err != nil {
			if _, _, ok := r.Env.Catalog.QuantizedCheckpoint(sd.Spec.Model.Name); !ok {
				return estimate.Env{}, fmt.Errorf("spec.model.name: %v; or give its config.json in spec.model.configMap", err)
			}
		}
		return r.Env, nil
	}
	var cm corev1.ConfigMap
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: sd.Namespace, Name: ref.Name}, &cm); err != nil {
		return estimate.Env{}, fmt.Errorf("spec.model.configMap: %s: %v", ref.Name, err)
	}
	data, ok := cm.Data["config.json"]
	if !ok {
		return estimate.Env{}, fmt.Errorf("spec.model.configMap: ConfigMap %s has no key config.json", ref.Name)
	}
	m, err := catalog.ParseHFConfig([]byte(data), sd.Spec.Model.Name)
	if err != nil {
		return estimate.Env{}, fmt.Errorf("spec.model.configMap: %s: %v", ref.Name, err)
	}
	cat, err := catalog.Default()
	if err != nil {
		return estimate.Env{}, err
	}
	if err := cat.AddModel(m); err != nil {
		return estimate.Env{}, fmt.Errorf("spec.model.configMap: %v", err)
	}
	return estimate.Env{Catalog: cat, Params: r.Env.Params}, nil
}

// ReadDevices reads what devicepool.Build needs: ResourceSlices,
// DeviceClasses, ResourceClaims and, for a node selector, the matching
// nodes' labels. The controller reads its cache, `configure
// --pool-from-cluster` the API server.
func ReadDevices(ctx context.Context, c client.Reader, nodeSelector map[string]string) (devicepool.Snapshot, error) {
	var s devicepool.Snapshot
	var slices resourcev1.ResourceSliceList
	if err := c.List(ctx, &slices); err != nil {
		return s, fmt.Errorf("list ResourceSlices: %w", err)
	}
	var classes resourcev1.DeviceClassList
	if err := c.List(ctx, &classes); err != nil {
		return s, fmt.Errorf("list DeviceClasses: %w", err)
	}
	var claims resourcev1.ResourceClaimList
	if err := c.List(ctx, &claims); err != nil {
		return s, fmt.Errorf("list ResourceClaims: %w", err)
	}
	s.Slices, s.Classes, s.Claims = slices.Items, classes.Items, claims.Items
	if len(nodeSelector) > 0 {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes, client.MatchingLabels(nodeSelector)); err != nil {
			return s, fmt.Errorf("list nodes: %w", err)
		}
		s.NodeLabels = map[string]map[string]string{}
		for _, n := range nodes.Items {
			s.NodeLabels[n.Name] = n.Labels
		}
	}
	return s, nil
}

// snapshot reads the DRA state; the object's own pods' claims count as free.
func (r *Reconciler) snapshot(ctx context.Context, sd *v1alpha1.ServingDeployment) (devicepool.Snapshot, error) {
	s, err := ReadDevices(ctx, r.Client, sd.Spec.Serving.NodeSelector)
	if err != nil {
		return s, err
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(sd.Namespace), client.MatchingLabels{ownerLabel: sd.Name}); err != nil {
		return s, fmt.Errorf("list pods: %w", err)
	}
	s.Mine = map[types.UID]bool{}
	for _, p := range pods.Items {
		s.Mine[p.UID] = true
	}
	return s, nil
}

func skippedText(p *devicepool.Pool) string {
	if len(p.Skipped) == 0 {
		return "check the classes exist and the devices are published and free (gpuplane explain shows why a device is not picked)"
	}
	return fmt.Sprintf("devices the catalog does not know were skipped: %v (add them with a catalog file)", p.Skipped)
}

func describe(p *v1alpha1.Plan) string {
	parts := make([]string, 0, len(p.Pools))
	for _, pool := range p.Pools {
		part := fmt.Sprintf("%s %d x %s tp%d", pool.Role, pool.Workers, pool.Device, pool.TP)
		for _, x := range []struct {
			name string
			n    int32
		}{{"pp", pool.PP}, {"dp", pool.DP}, {"ep", pool.EP}} {
			if x.n > 1 {
				part += fmt.Sprintf(" %s%d", x.name, x.n)
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " + ")
}

// planKey identifies what the objects depend on: a change rolls the pools.
func planKey(p *v1alpha1.Plan) string {
	k := p.Mode
	for _, pool := range p.Pools {
		k += fmt.Sprintf("|%s:%s:%d:%d", pool.Role, pool.Device, pool.TP, pool.Batch)
		if pool.PP > 1 || pool.EP > 1 || pool.DP > 1 {
			// Shapes only MoE and multi-node plans have; the key of others stays as it was.
			k += fmt.Sprintf(":pp%d:ep%d:dp%d", pool.PP, pool.EP, pool.DP)
		}
	}
	return k
}
