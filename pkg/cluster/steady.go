package cluster

import (
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// DefaultIdleCheck is how often a steady cluster is looked at again when nothing wakes its
// loop. A member pod that changes (its readiness follows etcd's /readyz) wakes the loop at
// once, and so does a change of a user's Secret that spec.tls names and that carries the
// operator's label (the cache holds it); what only the look finds is etcd's own view: a member
// removed or an alarm raised outside the operator, a user's unlabelled Secret renewed, a leaf
// due. Every look asks each member, so with hundreds of clusters this interval is most of what
// an idle operator costs (docs/scale.md).
const DefaultIdleCheck = 30 * time.Second

// whileUnsettled is the longest wait after a pass that had nothing to do while the cluster is
// not settled (settled): a bound the planner counts (a pod that cannot start, an election)
// is reported on the first pass past it, and such a state may change no pod.
const whileUnsettled = 10 * time.Second

// whenSteady is when a pass that found nothing to do, or a cluster another installation
// drives, looks again: the idle check, shortened where a deadline it polls for needs more
// looks. Each look may renew the cluster's Lease a third of the way into the takeover bound
// (installation.go), and six looks per bound keep a renewal due well before another
// installation may take over, whatever the pass's own length. A leaf is renewed two thirds
// into its life, and the rest of it covers the kubelet's refresh of the mounted Secret: thirty
// looks per lifetime leave that third almost whole (a five-minute test leaf: one look every
// ten seconds; a cluster in plaintext has no leaf, and its spec's lifetime is as good a bound).
func (r *Reconciler) whenSteady(c *api.EtcdCluster) time.Duration {
	d := r.deps.IdleCheck
	if d <= 0 {
		d = DefaultIdleCheck
	}
	return min(d, r.takeoverAfter()/6, r.leafLifetime(c)/30)
}

// settled: the cluster is as its spec asks and nothing about it is under way: every member
// spec.size asks for is voting and healthy, and every pod runs, ready, with no problem and
// not terminating. Only then does a pass with nothing to do wait the whole idle check.
func settled(s plan.State) bool {
	voting, healthy := plan.VotingCounts(s.Members)
	if !s.MembersKnown || len(s.Members) != s.Size || voting != s.Size || healthy != voting || len(s.Pods) != s.Size {
		return false
	}
	for _, p := range s.Pods {
		if p.Terminating || p.NotReady || p.Problem != nil || p.Waiting != "" || p.RestartPending {
			return false
		}
	}
	return true
}
