// Package manifest turns a configuration the search chose into deployable
// Kubernetes objects: per pool a Deployment (or a LeaderWorkerSet when one
// worker spans nodes) whose pods claim their devices through a DRA
// ResourceClaimTemplate with a CEL selector, a Service, and the engine's
// arguments for TP and the prefill/decode role; or one Dynamo
// DynamoGraphDeployment. It is pure: objects in, YAML out.
package manifest

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/configure"
)

// DRA drivers whose attribute names the selectors use.
const (
	DriverGPUPlane = "gpuplane"
	DriverNVIDIA   = "nvidia"
)

// Options shape the emitted objects.
type Options struct {
	// Name prefixes every object (default: from the model name).
	Name      string
	Namespace string
	// Driver is "gpuplane" (gpu.gpuplane.io) or "nvidia" (gpu.nvidia.com).
	Driver string
	// Image overrides the backend's default container image.
	Image   string
	Model   string
	Backend string
	// Quantization is the weight precision when the engine must quantise a
	// checkpoint of another precision on load ("fp8"); KVCache the cache's
	// precision when it is not the weights' ("fp8").
	Quantization string
	KVCache      string
	Catalog      *catalog.Catalog
	// HFTokenSecret names a Secret whose key HF_TOKEN the workers read
	// (optional in the pod, so public models start without it).
	HFTokenSecret string
	// ModelCacheClaim is a PersistentVolumeClaim for the model cache;
	// empty: an emptyDir per pod.
	ModelCacheClaim string
	// NodeSelector replaces the default GPU node selector.
	NodeSelector map[string]string
	// Labels are added to every object and pod.
	Labels map[string]string
	// FrontendImage is gpuplane's image, which runs the router (and the
	// emulated engine); default: DefaultGPUPlaneImage.
	FrontendImage string
	// Spec, when set, turns on the draft the search priced in the
	// decoding workers.
	Spec *Speculative
}

// Port is the engines' HTTP port.
const Port = 8000

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// DefaultName derives an object name from a model name: "Qwen/Qwen3-32B" -> "qwen3-32b".
func DefaultName(model string) string {
	if i := strings.LastIndex(model, "/"); i >= 0 {
		model = model[i+1:]
	}
	n := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(model), "-"), "-")
	if len(n) > 40 {
		n = strings.Trim(n[:40], "-")
	}
	if n == "" {
		n = "model"
	}
	return n
}

func (o *Options) normalise() error {
	if o.Name == "" {
		o.Name = DefaultName(o.Model)
	}
	if o.Driver == "" {
		o.Driver = DriverGPUPlane
	}
	if o.Driver != DriverGPUPlane && o.Driver != DriverNVIDIA {
		return fmt.Errorf("dra-driver: %q is not gpuplane or nvidia", o.Driver)
	}
	if o.Catalog == nil {
		return fmt.Errorf("manifest: catalog is required")
	}
	if o.Model == "" || o.Backend == "" {
		return fmt.Errorf("manifest: model and backend are required")
	}
	if o.FrontendImage == "" {
		o.FrontendImage = DefaultGPUPlaneImage
	}
	return nil
}

// Kubernetes renders the configuration as a multi-document YAML stream.
func Kubernetes(c configure.Config, o Options) ([]byte, error) {
	objs, err := Objects(c, o)
	if err != nil {
		return nil, err
	}
	return render(objs)
}

// Objects are the configuration's objects: per pool a claim template,
// workload and Service, then the router in front of them. A pool that
// spans nodes is a LeaderWorkerSet, written as an unstructured map; the
// rest are typed API objects.
func Objects(c configure.Config, o Options) ([]any, error) {
	if err := o.normalise(); err != nil {
		return nil, err
	}
	var objs []any
	for _, p := range []*configure.Pool{c.Agg, c.Prefill, c.Decode} {
		if p == nil {
			continue
		}
		po, err := o.pool(p, max(c.Copies, 1))
		if err != nil {
			return nil, fmt.Errorf("%s pool: %w", p.Role, err)
		}
		objs = append(objs, po...)
	}
	return append(objs, o.frontend(c.Mode)...), nil
}

func render(objs []any) ([]byte, error) {
	var b bytes.Buffer
	for i, obj := range objs {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// labels mark every object of a component; selector picks its pods.
func (o *Options) labels(role string) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/name":       o.Name,
		"app.kubernetes.io/component":  role,
		"app.kubernetes.io/managed-by": "gpuplane",
		"gpuplane.io/role":             role,
	}
	for k, v := range o.Labels {
		l[k] = v
	}
	return l
}

// PodLabels select the pods of one role (a pool, or the router) of the
// deployment called name: the workloads' selectors, the router's worker
// discovery and the controller's planner all find pods by them.
func PodLabels(name, role string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": name, "gpuplane.io/role": role}
}

func (o *Options) selector(role string) map[string]string { return PodLabels(o.Name, role) }

// selectorText is the role's label selector as a flag value.
func (o *Options) selectorText(role string) string {
	return labels.SelectorFromSet(PodLabels(o.Name, role)).String()
}

func (o *Options) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels}
}

// pool renders one pool: claim template, workload and service.
func (o *Options) pool(p *configure.Pool, copies int) ([]any, error) {
	dev, err := o.Catalog.Device(p.Device, "")
	if err != nil {
		return nil, err
	}
	name := o.Name + "-" + p.Role
	labels := o.labels(p.Role)
	pp := max(p.PP, 1)
	// A pod is one node's share of a worker: tp devices a pipeline stage,
	// or all tp x dp devices of an attention-DP worker.
	rct := o.claimTemplate(name+"-gpus", labels, dev, p.TP*ranks(p))
	container, extra := o.container(p)
	claimName := "gpus"
	container.Resources.Claims = []corev1.ResourceClaim{{Name: claimName}}
	tmplName := rct.Name
	nodeSelector := o.NodeSelector
	if nodeSelector == nil {
		nodeSelector = map[string]string{"nvidia.com/gpu.present": "true"}
	}
	podSpec := corev1.PodSpec{
		Containers:     []corev1.Container{container},
		ResourceClaims: []corev1.PodResourceClaim{{Name: claimName, ResourceClaimTemplateName: &tmplName}},
		NodeSelector:   nodeSelector,
		// Engines drain requests in flight on SIGTERM.
		TerminationGracePeriodSeconds: ptr.To[int64](60),
	}
	podSpec.Volumes = append(o.volumes(), extraVolumes(extra, name)...)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}
	objs := []any{rct}
	if extra != nil {
		objs = append(objs, configMap(o, name+"-config", labels, extra))
	}
	replicas := int32(p.Workers * copies)
	if pp > 1 {
		// One worker spans pp nodes: a LeaderWorkerSet keeps each group together.
		objs = append(objs, leaderWorkerSet(o.meta(name, labels), replicas, int32(pp), tmpl))
	} else {
		objs = append(objs, &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: o.meta(name, labels),
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: o.selector(p.Role)},
				Template: tmpl,
			},
		})
	}
	objs = append(objs, &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: o.meta(name, labels),
		// Headless: the router reaches workers by pod IP, and a
		// pool needs DNS per pod (KV transfer peers), not a virtual IP.
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  o.selector(p.Role),
			Ports:     []corev1.ServicePort{{Name: "http", Port: Port, TargetPort: intstr.FromInt32(Port)}},
		},
	})
	return objs, nil
}

// claimTemplate asks for count devices of the chosen kind.
func (o *Options) claimTemplate(name string, labels map[string]string, d catalog.Device, count int) *resourcev1.ResourceClaimTemplate {
	class, expr := Selector(o.Driver, d)
	return &resourcev1.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: o.meta(name, labels),
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class,
				Selectors:       []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}},
				AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
				Count:           int64(count),
			}}},
		}}},
	}
}

// Selector is the DeviceClass and CEL expression that pick device d under
// the driver's attribute names: the product name for a whole GPU, plus the
// profile for a MIG partition, plus the memory for a vGPU share (NVIDIA's
// driver publishes a vGPU as a plain gpu, so memory is what tells them apart).
func Selector(driver string, d catalog.Device) (class, expr string) {
	domain := "gpu.gpuplane.io"
	prefix := "gpuplane.io"
	if driver == DriverNVIDIA {
		domain, prefix = "gpu.nvidia.com", "nvidia.com"
	}
	attr := func(n string) string { return fmt.Sprintf("device.attributes[%q].%s", domain, n) }
	product := fmt.Sprintf("%s == %q", attr("productName"), d.GPU.ProductName)
	switch d.Kind {
	case catalog.SliceMIG:
		return "mig." + prefix, fmt.Sprintf("%s && %s == %q", product, attr("profile"), d.Slice)
	case catalog.SliceVGPU:
		mem := fmt.Sprintf("device.capacity[%q].memory.compareTo(quantity(%q)) >= 0", domain, giQuantity(d.MemoryGiB))
		if driver == DriverNVIDIA {
			return "gpu.nvidia.com", product + " && " + mem
		}
		return "vgpu.gpuplane.io", fmt.Sprintf("%s && %s && %s == %q", product, mem, attr("vgpuFraction"), d.Slice)
	}
	return "gpu." + prefix, product
}

// giQuantity rounds a memory size down to a whole Gi quantity: a device
// reports slightly less than its nominal size.
func giQuantity(gib float64) string {
	q := resource.MustParse(strconv.Itoa(int(gib)) + "Gi")
	return q.String()
}

// Precisions derives the engine's quantisation flags from the searched
// "weights/kv" precision: weights need quantising when they differ from the
// model's native precision, and the cache when it is not bf16. Engines
// quantise to fp8 (and fp4 on Blackwell) on load, but 4-bit weight-only and
// int8 weights come from a calibrated checkpoint, so those need its name.
func Precisions(cat *catalog.Catalog, model, precision string) (quant, kv string, err error) {
	w, k, _ := strings.Cut(precision, "/")
	native := catalog.BF16
	if _, p, ok := cat.QuantizedCheckpoint(model); ok {
		native = p // the checkpoint is already quantised
	} else if m, err := cat.Model(model); err == nil && m.NativeDtype != "" {
		native = m.NativeDtype
	}
	if w != "" && w != string(native) {
		if p := catalog.Precision(w); p == catalog.W4A16 || p == catalog.INT8 {
			return "", "", fmt.Errorf("precision %s: engines load %s weights from a quantised checkpoint, not from %s; name one as the model (for example %s-AWQ for w4a16, or a -quantized.w8a8 checkpoint for int8)",
				w, w, model, model)
		}
		quant = w
	}
	if k != "" && k != string(catalog.BF16) {
		kv = k
	}
	return quant, kv, nil
}
