package member

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// What the pod policy (spec.pod) may change in a member pod, and the defaults it starts from.

// podSecurityContext is the user's pod security context over a default that passes the
// "restricted" Pod Security Standard (etcd needs no root, only its data directory): each field
// the user leaves out keeps the default, so that setting only fsGroup keeps runAsNonRoot. The
// CRD refuses the settings that would leave the standard (runAsNonRoot false, root,
// Unconfined profiles).
func podSecurityContext(user *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	sc := user.DeepCopy()
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = ptr.To(true)
	}
	if sc.RunAsUser == nil {
		sc.RunAsUser = ptr.To(nonRootUID)
	}
	if sc.RunAsGroup == nil {
		sc.RunAsGroup = ptr.To(nonRootUID)
	}
	if sc.FSGroup == nil {
		sc.FSGroup = ptr.To(nonRootUID)
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	return sc
}

// DefaultRequests are the requests of the etcd container for each resource the pod policy
// gives neither a request nor a limit: no member pod, the seed included, is BestEffort, the
// first class the kubelet evicts under pressure. No limit by default: a memory limit kills
// etcd when its database outgrows it.
var DefaultRequests = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("50m"),
	corev1.ResourceMemory: resource.MustParse("128Mi"),
}

// resources are the etcd container's resources: the pod policy's, with DefaultRequests for
// what it leaves out. A resource with only a limit keeps no request of ours: the apiserver
// then sets the request to the limit, and a default above the limit would be refused.
func resources(user corev1.ResourceRequirements) corev1.ResourceRequirements {
	r := *user.DeepCopy()
	for name, q := range DefaultRequests {
		_, requested := r.Requests[name]
		_, limited := r.Limits[name]
		if requested || limited {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = q.DeepCopy()
	}
	return r
}

// userEnv keeps the user's variables that spec.pod.env may set (api.EnvAllowed). The CRD
// refuses the others; an object stored before it did still never passes them to etcd.
func userEnv(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if api.EnvAllowed(e.Name) {
			out = append(out, *e.DeepCopy())
		}
	}
	return out
}
