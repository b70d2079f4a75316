package cluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Moving a running cluster's client port on or off TLS (docs/tls.md). spec.tls.client says
// where the port is going; the member pods say where it is. Each member is rolled twice, one
// at a time through the rollout (rule 8): first to serve both plaintext and TLS on the port
// (member.ClientDual), then, once every member does, to serve what the spec asks alone. The
// operator, member-init and backups dial what every member serves at each step, so no member
// is ever cut off from them, and nothing about the move is kept anywhere but in the pods.

// clientModes are the client modes the cluster's member pods serve, read back from them.
func clientModes(c *api.EtcdCluster, pods map[int]*corev1.Pod) []member.ClientMode {
	out := make([]member.ClientMode, 0, len(pods))
	for _, p := range pods {
		if t, ok := member.ReadTemplate(c.Name, p); ok {
			out = append(out, t.Client)
		}
	}
	return out
}

// clientTarget is the client mode member pods are built with now: the spec's once no pod
// serves the other mode alone; until then both (member.ClientDual), which every pod reaches
// first.
func clientTarget(c *api.EtcdCluster, modes []member.ClientMode) member.ClientMode {
	want := member.SpecClientMode(c)
	for _, m := range modes {
		if m != want && m != member.ClientDual {
			return member.ClientDual
		}
	}
	return want
}

// servesClientTLS reports whether member pod p serves its client port over TLS (alone, or
// beside plaintext).
func servesClientTLS(c *api.EtcdCluster, p *corev1.Pod) bool {
	t, ok := member.ReadTemplate(c.Name, p)
	return ok && t.Client.TLS()
}

// dialTLS reports whether the operator dials the cluster's members over TLS: when no member
// pod serves plaintext alone and one serves TLS; with no pods, as the spec asks. During a move
// every pod serves what this picks (clientTarget never lets plaintext-only and TLS-only pods
// run side by side).
func dialTLS(c *api.EtcdCluster, modes []member.ClientMode) bool {
	if len(modes) == 0 {
		return member.ClientTLS(c)
	}
	for _, m := range modes {
		if m == member.ClientPlain {
			return false
		}
	}
	return true
}

// clientTLSInUse reports whether the cluster's client port needs its certificates: the spec
// asks for TLS, or a member pod still serves it (a move off TLS under way).
func clientTLSInUse(c *api.EtcdCluster, modes []member.ClientMode) bool {
	if member.ClientTLS(c) {
		return true
	}
	for _, m := range modes {
		if m.TLS() {
			return true
		}
	}
	return false
}

// memberPods are the member pods of c in the cache, by ordinal (those c controls).
func memberPods(pods corelisters.PodLister, c *api.EtcdCluster) (map[int]*corev1.Pod, error) {
	out := map[int]*corev1.Pod{}
	if pods == nil {
		return out, nil
	}
	list, err := pods.Pods(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		if ord, ok := member.Ordinal(c.Name, p.Name); ok && metav1.IsControlledBy(p, c) {
			out[ord] = p
		}
	}
	return out, nil
}
