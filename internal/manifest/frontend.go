package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// DefaultGPUPlaneImage is gpuplane's own image (router, planner, emulated
// engine); the tag is the release the manifests were written for.
var DefaultGPUPlaneImage = "ghcr.io/gpuplane/gpuplane:v0.1.0"

// FrontendPort is the router's port, the deployment's endpoint.
const FrontendPort = 8080

// frontend is the request path: gpuplane's router, which finds the
// workers by label and sends each prompt to a prefill worker and then to
// a decode worker (or to an aggregated worker), with the account and the
// read-only pod access it needs for that.
func (o *Options) frontend(mode string) []any {
	name := o.Name + "-frontend"
	labels := o.labels("frontend")
	args := []string{"frontend", "--namespace", "$(POD_NAMESPACE)", "--host", "0.0.0.0", "--port", itoa(FrontendPort), "--worker-port", itoa(Port)}
	if mode == "disagg" {
		args = append(args, "--prefill-selector", o.selectorText("prefill"), "--decode-selector", o.selectorText("decode"))
	} else {
		args = append(args, "--selector", o.selectorText("agg"))
	}
	health := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/metrics", Port: intstr.FromInt32(FrontendPort)}}
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: o.meta(name, labels)}
	role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: o.meta(name, labels),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: o.meta(name, labels),
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: o.Namespace}}}
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: o.meta(name, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: o.selector("frontend")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName: name,
				SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)},
				Containers: []corev1.Container{{
					Name: "frontend", Image: o.FrontendImage, Args: args,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: FrontendPort}},
					Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: health, PeriodSeconds: 5},
					LivenessProbe:  &corev1.Probe{ProbeHandler: health, PeriodSeconds: 15, FailureThreshold: 4},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				}},
			}},
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: o.meta(name, labels),
		Spec: corev1.ServiceSpec{Selector: o.selector("frontend"),
			Ports: []corev1.ServicePort{{Name: "http", Port: FrontendPort, TargetPort: intstr.FromInt32(FrontendPort)}}},
	}
	return []any{sa, role, binding, dep, svc}
}
