package cluster

import (
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// PassRecorder is told what the passes of each cluster did, for the per-cluster metrics
// (pkg/clustermetrics keeps them). Nothing a pass decides is read back from it. Its methods
// are called from every cluster's loop at once, and must be safe for concurrent use and not
// block.
type PassRecorder interface {
	// ActionTaken records that a pass carried out an action of kind on the cluster: the
	// actor changed the world (a change already made, or refused for now, is not one).
	ActionTaken(namespace, name string, kind plan.ActionKind)
	// MemberReplaced records the removal of a member of the cluster that is to be added
	// again under its name (its data gone, its pod crash-looping).
	MemberReplaced(namespace, name string)
	// PassSucceeded records that a pass over the cluster ended at t without error.
	PassSucceeded(namespace, name string, t time.Time)
	// Forget drops what was recorded of the cluster: its loop ends.
	Forget(namespace, name string)
	// EtcdClientOpened records that a pass of the cluster opened a client to its members:
	// none was kept that connects to the same members the same way (etcdClients).
	EtcdClientOpened(namespace, name string)
	// EtcdClientClosed records that a client of the cluster's was closed.
	EtcdClientClosed(namespace, name string)
}

// noRecorder records nothing, for a Reconciler given no PassRecorder.
type noRecorder struct{}

func (noRecorder) ActionTaken(string, string, plan.ActionKind) {}
func (noRecorder) MemberReplaced(string, string)               {}
func (noRecorder) PassSucceeded(string, string, time.Time)     {}
func (noRecorder) Forget(string, string)                       {}
func (noRecorder) EtcdClientOpened(string, string)             {}
func (noRecorder) EtcdClientClosed(string, string)             {}

var _ PassRecorder = noRecorder{}

// passes is the Reconciler's PassRecorder, or one that records nothing.
func (r *Reconciler) passes() PassRecorder {
	if r.deps.Passes == nil {
		return noRecorder{}
	}
	return r.deps.Passes
}
