package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// act hands the decision's action to the actor, with what this pass observed: the
// pod to delete, the voting members to send a membership change to, the leader's address.
// It returns how soon to look again: right away after a change, since etcd-side changes
// raise no Kubernetes event, or later when the change could not be made yet.
func (r *Reconciler) act(ctx context.Context, c *api.EtcdCluster, o *observation, d plan.Decision) (time.Duration, error) {
	a := *d.Action
	res, err := r.perform(ctx, c, o, a, d.Message)
	if err != nil {
		return 0, err
	}
	if res.Changed {
		r.passes().ActionTaken(c.Namespace, c.Name, a.Kind)
		if a.Kind == plan.ActionRemoveMember && d.Progress == api.ReasonReplacingMember {
			r.passes().MemberReplaced(c.Namespace, c.Name)
		}
	}
	if res.Refused != nil {
		r.log(c).WithField("action", string(a.Kind)).WithError(res.Refused).Debug("etcd refused the change for now")
	}
	if res.RetryIn > 0 {
		return res.RetryIn, nil
	}
	return afterAction, nil
}

// perform makes the write action a stands for, why being the planner's message.
func (r *Reconciler) perform(ctx context.Context, c *api.EtcdCluster, o *observation, a plan.Action, why string) (res Result, err error) {
	switch a.Kind {
	case plan.ActionCreatePod:
		res, err = r.control.CreatePod(ctx, c, member.Template{Ordinal: a.Ordinal, ClusterState: a.ClusterState,
			InitialCluster: a.InitialCluster, Version: a.PodVersion, MemberID: a.MemberID,
			PeerURLs: o.peerURLsFor(a.InitialCluster), Restore: o.restoreFor(a), PeerListen: o.peer.Listen,
			Client: o.clientTarget, DialTLS: o.dialTLS, MaxLearners: a.MaxLearners,
			Trust: o.trustFor(a.Ordinal, nil, o.clientTarget)}, why)
	case plan.ActionDeletePod:
		if p := o.pods[a.Ordinal]; p != nil {
			res, err = r.control.DeletePod(ctx, c, p, why)
		}
	case plan.ActionDeleteClaim:
		if pvc := o.claims[a.Ordinal]; pvc != nil {
			res, err = r.control.DeleteClaim(ctx, c, pvc, why)
		}
	case plan.ActionAddLearner:
		res, err = r.control.AddLearner(ctx, c, o.voterEndpoints(0), a.Ordinal, o.joiningPeerURL(a.Ordinal))
		if err == nil {
			err = r.markLearnerClaim(ctx, o, a.Ordinal, res.MemberID)
		}
	case plan.ActionMovePeerURL:
		res, err = r.movePeerURL(ctx, c, o, a.Ordinal, a.MemberID, a.PeerURL, why)
	case plan.ActionPromote:
		res, err = r.control.Promote(ctx, c, o.voterEndpoints(0), a.Ordinal, a.MemberID)
	case plan.ActionRemoveMember:
		// Its claim says so first (flagRemoved). The member being removed may stop at any
		// moment: it is not asked.
		if err = r.flagRemoved(ctx, o, a.Ordinal, a.MemberID); err == nil {
			res, err = r.control.RemoveMember(ctx, c, o.voterEndpoints(a.MemberID), a.Ordinal, a.MemberID, why)
		}
	case plan.ActionChooseSurvivor:
		res, err = r.chooseSurvivor(ctx, c, a)
	case plan.ActionForceNewCluster:
		res, err = r.forceNewCluster(ctx, c, o, a, why)
	case plan.ActionRollMember, plan.ActionRestartInPlace, plan.ActionPatchPod:
		res, err = r.actOnRollout(ctx, c, o, a, why)
	case plan.ActionEnableDowngrade:
		res, err = r.control.Downgrade(ctx, c, o.voterEndpoints(0), a.Version)
	case plan.ActionCancelDowngrade:
		res, err = r.control.Downgrade(ctx, c, o.voterEndpoints(0), "")
	case plan.ActionMoveLeader:
		leader := o.pods[a.Ordinal]
		if leader == nil || leader.Status.PodIP == "" {
			// Its pod is not there to be asked yet: looked at again a while later.
			return Result{RetryIn: whileWaiting}, nil
		}
		res, err = r.control.MoveLeader(ctx, c, member.PodClientURL(leader.Status.PodIP, o.dialTLS), a.Ordinal, a.Transferee)
	}
	return res, err
}

// actOnRollout takes a rollout's step on a member's pod: roll it, change its image in place,
// or patch its labels and annotations. A pod gone meanwhile needs nothing.
func (r *Reconciler) actOnRollout(ctx context.Context, c *api.EtcdCluster, o *observation, a plan.Action, why string) (Result, error) {
	p := o.pods[a.Ordinal]
	switch {
	case p == nil:
		return Result{}, nil
	case a.Kind == plan.ActionRollMember:
		return r.rollMember(ctx, c, p, a.Evict, why)
	case a.Kind == plan.ActionRestartInPlace:
		target := member.Target{Version: a.PodVersion, Client: o.clientFor(p), Peer: o.peer.Listen}
		target.Trust = o.trustFor(a.Ordinal, p, target.Client)
		return r.restartInPlace(ctx, c, p, target, why)
	default:
		return r.patchPodMetadata(ctx, c, p)
	}
}

// headlessPeerURLs are the peer URLs, by ordinal, of those of the given members that were
// added on the headless name, before the member Services: a pod made for them or with them
// must name each member as etcd lists it. etcd's member list says; when no member answered,
// the members' pods say what they were made with.
func (o *observation) headlessPeerURLs(ordinals []int) map[int]string {
	c := o.cluster
	out := map[int]string{}
	if o.membersKnown {
		for _, m := range o.members {
			ord, ok := o.memberOrdinal(m)
			if ok && slices.Contains(ordinals, ord) && m.PeerURLs[0] == member.HeadlessPeerURL(c, ord) {
				out[ord] = m.PeerURLs[0]
			}
		}
	} else {
		for _, p := range o.pods {
			t, _ := member.ReadTemplate(c.Name, p)
			for ord, u := range t.PeerURLs {
				if slices.Contains(ordinals, ord) && u == member.HeadlessPeerURL(c, ord) {
					out[ord] = u
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// markLearnerClaim marks the claim of a learner just added with its member ID, at once: its
// etcd writes its data there as soon as it starts, and a learner removed before a pass lists
// it with its pod would otherwise leave its data on an unmarked claim, on which the ordinal's
// next pod, made for a new member, would start etcd as the removed member (found by
// TestPlanPropertyInvariants). A marked claim of a removed member is replaced before reuse
// (prepareClaim). syncClaims marks it on a later pass if the operator dies before this.
func (r *Reconciler) markLearnerClaim(ctx context.Context, o *observation, ordinal int, id uint64) error {
	pvc := o.claims[ordinal]
	if id == 0 || pvc == nil || pvc.Annotations[member.AnnotationMemberID] != "" {
		return nil
	}
	if _, err := r.control.AnnotateClaim(ctx, pvc, id); err != nil {
		return fmt.Errorf("marking the claim of learner %s: %w", member.Name(o.cluster.Name, ordinal), err)
	}
	return nil
}
