package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The reconciler's side of recovering a quorum lost for good (the rules are in
// plan/plan_quorum.go). The choice of the survivor lives in the cluster's AnnotationRecoverQuorum
// from the moment it is made until etcd lists members again, so that an operator killed
// between any two steps picks up the same survivor, and never a second one.

// chooseSurvivor writes the survivor the planner chose in the cluster's annotation, in place
// of "highest" (or of nothing, with FromSurvivor), and says so in an Event.
func (r *Reconciler) chooseSurvivor(ctx context.Context, c *api.EtcdCluster, a plan.Action) (Result, error) {
	name := member.Name(c.Name, a.Ordinal)
	if err := r.control.AnnotateCluster(ctx, c, api.AnnotationRecoverQuorum, name); err != nil {
		return Result{}, fmt.Errorf("choosing %s to recover quorum from: %w", name, err)
	}
	r.log(c).WithFields(map[string]any{"member": name, "id": hexID(a.MemberID), "raftIndex": a.RaftIndex}).
		Warn("quorum lost for good: recovering from the survivor with the highest raft index")
	r.event(c, corev1.EventTypeWarning, EventQuorumRecovery,
		"Quorum lost for good: recovering from member %s (%s), the survivor with the highest raft index %d; it restarts with --force-new-cluster",
		name, hexID(a.MemberID), a.RaftIndex)
	return Result{Changed: true}, nil
}

// forceNewCluster restarts the survivor with --force-new-cluster: its pod is deleted first
// (that very pod: a UID precondition), and made again with the flag once it is gone.
func (r *Reconciler) forceNewCluster(ctx context.Context, c *api.EtcdCluster, o *observation, a plan.Action, why string) (Result, error) {
	name := member.Name(c.Name, a.Ordinal)
	// --force-new-cluster drops every other member: their claims say so before the survivor's
	// pod goes.
	for _, ord := range plan.SortedOrdinals(o.claims) {
		if id := member.ParseID(o.claims[ord].Annotations[member.AnnotationMemberID]); ord != a.Ordinal && id != a.MemberID {
			if err := r.flagRemoved(ctx, o, ord, id); err != nil {
				return Result{}, err
			}
		}
	}
	if p := o.pods[a.Ordinal]; p != nil {
		if p.DeletionTimestamp != nil {
			return Result{RetryIn: whileWaiting}, nil
		}
		// The survivor's claim says whose data it holds before its pod goes: once the pod
		// no longer answers, the mark is what tells its data from a new, empty claim.
		if pvc := o.claims[a.Ordinal]; pvc != nil && pvc.Annotations[member.AnnotationMemberID] == "" {
			if _, err := r.control.AnnotateClaim(ctx, pvc, a.MemberID); err != nil {
				return Result{}, err
			}
		}
		res, err := r.control.DeletePod(ctx, c, p, why)
		if err == nil && res.Changed {
			r.event(c, corev1.EventTypeWarning, EventForceNewCluster,
				"Recovering quorum from member %s (%s, raft index %d): deleted its pod to restart it with --force-new-cluster",
				name, hexID(a.MemberID), a.RaftIndex)
		}
		return res, err
	}
	res, err := r.control.CreatePod(ctx, c, member.Template{Ordinal: a.Ordinal, ClusterState: a.ClusterState,
		InitialCluster: a.InitialCluster, Version: a.PodVersion, MemberID: a.MemberID, ForceNewCluster: true,
		PeerURLs: o.peerURLsFor(a.InitialCluster), PeerListen: o.peer.Listen, Client: o.clientTarget, DialTLS: o.dialTLS,
		MaxLearners: a.MaxLearners, Trust: o.trustFor(a.Ordinal, nil, o.clientTarget)}, why)
	if err == nil && res.Changed {
		r.event(c, corev1.EventTypeWarning, EventForceNewCluster,
			"Restarted member %s (%s) with --force-new-cluster on its data: it is the cluster's only member; the others join again as new members",
			name, hexID(a.MemberID))
	}
	return res, err
}

// clearRecoverQuorum removes the recover-quorum annotation once etcd lists members again and
// the cluster's status lists the same members: the recovery it asked for is done (or quorum
// came back on its own), and it must not act on a later loss. Not before status has caught
// up: in the pass that first lists the survivor alone, its pod is deleted to restart without
// --force-new-cluster, and if that pass's status write were lost with the annotation gone, a
// pass without a member list would plan from the members listed before the loss and could
// choose a second survivor. While the annotation stays, only the same survivor is ever
// forced. An operator killed before removing it removes it on a later pass.
func (r *Reconciler) clearRecoverQuorum(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	from, ok := c.Annotations[api.AnnotationRecoverQuorum]
	if !ok || !o.membersKnown || !statusListsMembers(c, o) {
		return nil
	}
	if err := r.control.UnannotateCluster(ctx, c, api.AnnotationRecoverQuorum); err != nil {
		return fmt.Errorf("removing the annotation %s: %w", api.AnnotationRecoverQuorum, err)
	}
	r.log(c).WithField("recoverFrom", from).Info("etcd lists members again: removed the recover-quorum annotation")
	r.event(c, corev1.EventTypeNormal, EventQuorumRecovered,
		"etcd lists members again: removed the annotation %s=%s", api.AnnotationRecoverQuorum, from)
	return nil
}

// statusListsMembers: the cluster's status lists the members etcd lists now, by ID.
func statusListsMembers(c *api.EtcdCluster, o *observation) bool {
	if len(c.Status.Members) != len(o.members) {
		return false
	}
	listed := map[uint64]bool{}
	for _, m := range c.Status.Members {
		listed[member.ParseID(m.ID)] = true
	}
	for _, m := range o.members {
		if !listed[m.ID] {
			return false
		}
	}
	return true
}
