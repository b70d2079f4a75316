package cluster

import (
	"maps"
	"slices"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// Which members a pass keeps certificates for, and for how long it issues them.

// leafLifetime is spec.tls.leafLifetime, or the default, never below the operator's minimum.
func (r *Reconciler) leafLifetime(c *api.EtcdCluster) time.Duration {
	d := DefaultLeafLifetime
	// spec.tls may be gone while the peers move off TLS (peerTLSInUse).
	if c.Spec.TLS != nil && c.Spec.TLS.LeafLifetime != nil {
		d = c.Spec.TLS.LeafLifetime.Duration
	}
	return max(d, r.minLifetime())
}

// caLifetime is spec.tls.caLifetime, or the default; at least three leaf lifetimes.
func (r *Reconciler) caLifetime(c *api.EtcdCluster) time.Duration {
	d := DefaultCALifetime
	if c.Spec.TLS != nil && c.Spec.TLS.CALifetime != nil {
		d = c.Spec.TLS.CALifetime.Duration
	}
	return max(d, 3*r.leafLifetime(c))
}

func (r *Reconciler) minLifetime() time.Duration {
	if r.deps.MinLifetime > 0 {
		return r.deps.MinLifetime
	}
	return DefaultMinLifetime
}

func (r *Reconciler) holdersRefresh() time.Duration {
	if r.deps.HoldersRefresh > 0 {
		return r.deps.HoldersRefresh
	}
	return plan.DefaultHoldersRefresh
}

// wantedOrdinals are the ordinals whose member may run: below spec.size, with a pod, or
// listed by etcd.
func wantedOrdinals(c *api.EtcdCluster, o *observation) []int {
	want := map[int]bool{}
	for ord := 0; ord < int(c.Spec.Size); ord++ {
		want[ord] = true
	}
	for ord := range o.pods {
		want[ord] = true
	}
	for _, m := range o.members {
		if ord, ok := o.memberOrdinal(m); ok {
			want[ord] = true
		}
	}
	return slices.Sorted(maps.Keys(want))
}

// idle: member pods run, and none takes the port ("peer", "client") over TLS.
func (t *tlsPass) idle(port string) bool {
	if port == "client" {
		return t.clientIdle
	}
	return t.peerIdle
}

// ordinalsInUse are the ordinals with a pod or in etcd's member list.
func ordinalsInUse(o *observation) map[int]bool {
	out := map[int]bool{}
	for ord := range o.pods {
		out[ord] = true
	}
	for _, m := range o.members {
		if ord, ok := o.memberOrdinal(m); ok {
			out[ord] = true
		}
	}
	return out
}

// runsOn: member ord runs, or may run, on what its Secret holds: it has a pod or is in etcd's
// member list, or nothing says which members run (no pod, no member known).
func (t *tlsPass) runsOn(ord int) bool {
	return len(t.inUse) == 0 || t.inUse[ord]
}
