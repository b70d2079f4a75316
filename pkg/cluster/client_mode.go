package cluster

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Moving a running cluster's client port on or off TLS (docs/tls.md). spec.tls.client says
// where the port is going; the member pods say where it is. Each member is rolled one at a
// time through the rollout (rule 8): first to serve both plaintext and TLS on the port
// (member.ClientDual), then, once no member serves the old mode alone, to serve what the spec
// asks alone. The operator and member-init dial what every member serves at each step, so no
// member is ever cut off from them, and nothing about the move is kept anywhere but in the
// pods.

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
// serves the other mode alone; until then both (member.ClientDual). Every member that runs
// serves both before any serves the spec's mode alone. A member whose pod is gone when the
// others serve both (the last one rolled in the first step) comes back in the spec's mode
// directly: waiting for it to serve both first would roll it again and again, since the
// second step rolls members by deleting their pods too.
func clientTarget(c *api.EtcdCluster, pods map[int]*corev1.Pod) member.ClientMode {
	want := member.SpecClientMode(c)
	for _, m := range clientModes(c, pods) {
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

// overTLS reports whether the endpoints (member.PodClientURL, as the pass built them) are
// dialled over TLS.
func overTLS(endpoints []string) bool {
	return len(endpoints) > 0 && strings.HasPrefix(endpoints[0], "https://")
}

// holdClientMove holds a move onto client TLS that has not passed its first step (a pod still
// serves plaintext alone) while the client port's certificates cannot be used (a Secret
// spec.tls.client names that fails its checks, a broken CA): members keep the mode they serve,
// and pods made meanwhile serve plaintext, as the members still do. Nothing is started on
// certificates that the spec does not name, and a member lost meanwhile comes back.
func (o *observation) holdClientMove(c *api.EtcdCluster, client *portSource) {
	if member.ClientTLS(c) && client != nil && client.frozen && slices.Contains(clientModes(c, o.pods), member.ClientPlain) {
		o.clientHeld, o.clientTarget = true, member.ClientPlain
	}
}

// clientFor is the client mode member pod p is current in: the target, or while a move is held,
// the mode p serves.
func (o *observation) clientFor(p *corev1.Pod) member.ClientMode {
	if o.clientHeld && p != nil {
		if t, ok := member.ReadTemplate(o.cluster.Name, p); ok {
			return t.Client
		}
	}
	return o.clientTarget
}

// needsClientCerts reports whether the pod of member ord mounts the client port's
// certificates, now or once it is rolled or made: its pod serves TLS, or the pod built now
// would.
func (o *observation) needsClientCerts(c *api.EtcdCluster, ord int) bool {
	p := o.pods[ord]
	if p != nil && servesClientTLS(c, p) {
		return true
	}
	if o.clientHeld && p != nil {
		return false
	}
	return o.clientTarget.TLS()
}
