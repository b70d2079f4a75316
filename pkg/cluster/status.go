package cluster

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/k8sutil"
)

// computeStatus derives the status from an observation and the pass's decision.
func computeStatus(old *api.EtcdCluster, o *observation, d Decision) api.EtcdClusterStatus {
	c := old
	st := *old.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.ServiceName = k8sutil.PeerServiceName(c.Name)
	st.ClientURL = k8sutil.ServiceClientURL(c.Name, c.Namespace)
	st.Selector = k8sutil.ClusterSelector(c.Name).String()

	s := o.state()
	voting, healthy := votingCounts(s.Members)
	if o.membersKnown {
		st.Size = int32(len(o.members))
		st.Members = nil
		for _, m := range s.Members {
			name := m.Name
			if m.Ordinal >= 0 {
				name = k8sutil.MemberName(c.Name, m.Ordinal)
			}
			st.Members = append(st.Members, api.MemberStatus{
				Name: name, ID: hexID(m.ID), Ready: m.Healthy && !m.Learner,
				Leader: m.Leader, Learner: m.Learner,
			})
		}
		sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].Name < st.Members[j].Name })
		st.ReadyMembers = int32(healthy)
	} else {
		for i := range st.Members {
			st.Members[i].Ready, st.Members[i].Leader = false, false
		}
		st.ReadyMembers = 0
	}
	if v := lowestVersion(o); v != "" {
		st.CurrentVersion = v
	}

	inSpec := o.membersKnown && len(s.Members) == s.Size && healthy == voting && voting == s.Size
	for _, m := range s.Members {
		if m.Ordinal < 0 || m.Ordinal >= s.Size {
			inSpec = false
		}
	}
	gen := c.Generation
	set := func(t api.ConditionType, status metav1.ConditionStatus, reason api.ConditionReason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: string(t), Status: status, Reason: string(reason), Message: msg, ObservedGeneration: gen,
		})
	}

	switch {
	case inSpec:
		set(api.ConditionAvailable, metav1.ConditionTrue, api.ReasonClusterHealthy,
			fmt.Sprintf("%d of %d members healthy and voting", healthy, s.Size))
	case !o.membersKnown && !s.Bootstrapped:
		set(api.ConditionAvailable, metav1.ConditionFalse, api.ReasonBootstrapping, "the seed member is starting")
	case o.membersKnown && healthy >= quorum(voting):
		reason := api.ReasonSizeMismatch
		if healthy < voting {
			reason = api.ReasonMembersUnhealthy
		}
		set(api.ConditionAvailable, metav1.ConditionFalse, reason, fmt.Sprintf(
			"quorum held; %d of %d voting members healthy, %d members, %d wanted", healthy, voting, len(s.Members), s.Size))
	default:
		set(api.ConditionAvailable, metav1.ConditionFalse, api.ReasonNoQuorum, "no quorum: the cluster cannot serve writes")
	}

	switch {
	case c.Spec.Paused:
		set(api.ConditionProgressing, metav1.ConditionFalse, api.ReasonPaused, "spec.paused is set; no change is made")
	case d.Progress != "":
		set(api.ConditionProgressing, metav1.ConditionTrue, d.Progress, d.Message)
	default:
		set(api.ConditionProgressing, metav1.ConditionFalse, api.ReasonReconciled, "the cluster matches its spec")
	}

	switch {
	case d.Blocked != "":
		set(api.ConditionDegraded, metav1.ConditionTrue, d.Blocked, d.Message)
	case o.membersKnown && healthy < voting:
		set(api.ConditionDegraded, metav1.ConditionTrue, api.ReasonMembersUnhealthy,
			fmt.Sprintf("%d of %d voting members are unhealthy", voting-healthy, voting))
	case st.CurrentVersion != "" && st.CurrentVersion != k8sutil.NormalizeVersion(c.Spec.Version):
		set(api.ConditionDegraded, metav1.ConditionTrue, api.ReasonVersionChangeUnsupported, fmt.Sprintf(
			"spec.version %s differs from the running %s: changing the version of a running cluster is not supported yet; members, new ones included, keep running %s",
			c.Spec.Version, st.CurrentVersion, st.CurrentVersion))
	default:
		set(api.ConditionDegraded, metav1.ConditionFalse, api.ReasonAsExpected, "nothing is wrong")
	}

	st.Phase = phase(c, o, s, d, inSpec)
	return st
}

func phase(c *api.EtcdCluster, o *observation, s State, d Decision, inSpec bool) api.ClusterPhase {
	switch {
	case c.Spec.Paused:
		return api.PhasePaused
	case d.Blocked != "":
		return api.PhaseDegraded
	case !s.Bootstrapped && !o.membersKnown:
		if len(o.pods) == 0 && d.Action == nil {
			return api.PhasePending
		}
		return api.PhaseBootstrapping
	case d.Progress == api.ReasonReplacingMember:
		return api.PhaseRecovering
	case d.Progress != "":
		return api.PhaseScaling
	case inSpec:
		return api.PhaseRunning
	default:
		return api.PhaseDegraded
	}
}

// lowestVersion is the oldest etcd version any member reports: the one the cluster speaks.
func lowestVersion(o *observation) string {
	var low *version.Version
	for _, st := range o.statuses {
		v, err := version.ParseGeneric(st.Version)
		if err != nil {
			continue
		}
		if low == nil || v.LessThan(low) {
			low = v
		}
	}
	if low == nil {
		return ""
	}
	return low.String()
}

// updateStatus writes the status through the status subresource, only when it changed, and
// records an Event when the cluster becomes available or degraded.
func (r *Reconciler) updateStatus(ctx context.Context, cached *api.EtcdCluster, o *observation, d Decision) error {
	st := computeStatus(cached, o, d)
	if equality.Semantic.DeepEqual(st, cached.Status) {
		return nil
	}
	wasAvailable := meta.IsStatusConditionTrue(cached.Status.Conditions, string(api.ConditionAvailable))
	oldDegraded := meta.FindStatusCondition(cached.Status.Conditions, string(api.ConditionDegraded))

	c := cached.DeepCopy()
	c.Status = st
	if _, err := r.deps.Clientset.EtcdV1alpha1().EtcdClusters(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}

	if avail := meta.FindStatusCondition(st.Conditions, string(api.ConditionAvailable)); avail != nil &&
		avail.Status == metav1.ConditionTrue && !wasAvailable {
		r.event(c, corev1.EventTypeNormal, EventClusterHealthy, "Cluster available: %s", avail.Message)
	}
	if deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded)); deg != nil &&
		deg.Status == metav1.ConditionTrue && (oldDegraded == nil || oldDegraded.Status != metav1.ConditionTrue ||
		oldDegraded.Reason != deg.Reason) {
		reason := EventClusterDegraded
		if d.Blocked == api.ReasonQuorumAtRisk {
			reason = EventChangeRefused
		}
		r.event(c, corev1.EventTypeWarning, reason, "%s", deg.Message)
	}
	return nil
}
