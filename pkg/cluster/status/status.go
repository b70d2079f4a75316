package status

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// condition is one condition a pass computes; Compute stamps it with the generation.
type condition struct {
	status  metav1.ConditionStatus
	reason  api.ConditionReason
	message string
}

// Compute derives the status from the pass's State and Decision alone: the same State
// the planner decided from, so status never says something the planner did not see.
func Compute(c *api.EtcdCluster, s plan.State, d plan.Decision) api.EtcdClusterStatus {
	st := *c.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.ServiceName = member.PeerServiceName(c.Name)
	st.ClientURL = member.ServiceClientURLOver(c, s.ClientTLS)
	if s.TLS.Status != nil || c.Spec.TLS == nil {
		// A paused pass does not look at the certificates: it keeps what was reported.
		st.TLS = s.TLS.Status
	}
	st.Selector = member.ClusterSelector(c.Name).String()

	electing := d.Progress == api.ReasonElectingLeader
	setMembers(&st, s, electing)
	if s.Version != "" {
		st.CurrentVersion = s.Version
	}

	inSpec := inSpec(s)
	for _, cond := range []struct {
		t api.ConditionType
		condition
	}{
		{api.ConditionAvailable, available(s, inSpec)},
		{api.ConditionProgressing, progressing(c.Spec.Paused, d)},
		{api.ConditionDegraded, degraded(s, d, c.Spec.Version, st.CurrentVersion)},
	} {
		next := metav1.Condition{Type: string(cond.t), Status: cond.status,
			Reason: string(cond.reason), Message: cond.message, ObservedGeneration: c.Generation}
		if prev := meta.FindStatusCondition(st.Conditions, next.Type); electing && cond.t != api.ConditionProgressing && prev != nil {
			// A short election: the condition keeps what it said (see plan/election.go).
			prev.ObservedGeneration = c.Generation
			continue
		}
		if cond.t == api.ConditionProgressing && electing && !electionReported(st.Conditions) {
			// Progressing may be True already: its lastTransitionTime is made the time the
			// election was first seen, which the election bound counts from.
			meta.RemoveStatusCondition(&st.Conditions, next.Type)
			next.LastTransitionTime = metav1.NewTime(s.Now)
		}
		if cond.t == api.ConditionDegraded && cond.reason == api.ReasonQuorumLost && !quorumLostReported(st.Conditions) {
			// Degraded is often True already (no quorum): its lastTransitionTime is made the
			// time the loss was first reported, which FromSurvivor's grace period counts from.
			meta.RemoveStatusCondition(&st.Conditions, next.Type)
			next.LastTransitionTime = metav1.NewTime(s.Now)
		}
		meta.SetStatusCondition(&st.Conditions, next)
	}
	if !electing || st.Phase == "" {
		// A short election keeps the phase too.
		st.Phase = phase(c.Spec.Paused, s, d, inSpec)
	}
	return st
}

// setMembers puts in st the members etcd reports and how many are ready. Nobody answered: the
// last known members stay listed, none of them ready, but during a short election, which
// keeps what status said.
func setMembers(st *api.EtcdClusterStatus, s plan.State, electing bool) {
	switch {
	case s.MembersKnown:
		st.Size = int32(len(s.Members))
		st.Members = statusMembers(s)
		_, healthy := plan.VotingCounts(s.Members)
		st.ReadyMembers = int32(healthy)
	case !electing:
		for i := range st.Members {
			st.Members[i].Ready, st.Members[i].Leader = false, false
		}
		st.ReadyMembers = 0
	}
}

// statusMembers lists the members etcd reports, by name.
func statusMembers(s plan.State) []api.MemberStatus {
	var out []api.MemberStatus
	for _, m := range s.Members {
		name := m.Name
		if m.Ordinal >= 0 {
			name = member.Name(s.Name, m.Ordinal)
		}
		ms := api.MemberStatus{
			Name: name, ID: member.FormatID(m.ID), Ready: m.Healthy && !m.Learner, Leader: m.Leader, Learner: m.Learner,
		}
		if st, ok := s.Statuses[m.Ordinal]; ok && m.Healthy && m.Ordinal >= 0 {
			ms.Version = st.Version
		}
		if p, ok := s.Pods[m.Ordinal]; ok && m.Ordinal >= 0 {
			ms.PodCurrent = !p.Outdated && !p.Terminating && !p.RestartPending
		}
		if _, ok := s.Claims[m.Ordinal]; ok && s.Persistent && m.Ordinal >= 0 {
			ms.Claim = member.ClaimName(s.Name, m.Ordinal)
		}
		out = append(out, ms)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// inSpec: exactly the members spec.size asks for, every one healthy and voting.
func inSpec(s plan.State) bool {
	voting, healthy := plan.VotingCounts(s.Members)
	if !s.MembersKnown || len(s.Members) != s.Size || healthy != voting || voting != s.Size {
		return false
	}
	for _, m := range s.Members {
		if m.Ordinal < 0 || m.Ordinal >= s.Size {
			return false
		}
	}
	return true
}

// available: the cluster serves reads and writes: a healthy majority of its voting members
// follows a leader, and no alarm blocks writes. Whether it matches its spec is Progressing's
// to say.
func available(s plan.State, inSpec bool) condition {
	voting, healthy := plan.VotingCounts(s.Members)
	// A leader the members follow, even one the operator itself cannot reach.
	led := false
	for _, m := range s.Members {
		led = led || m.Leader
	}
	switch {
	case !s.MembersKnown && !s.Bootstrapped:
		return condition{metav1.ConditionFalse, api.ReasonBootstrapping, "the seed member is starting"}
	case !s.MembersKnown || healthy < plan.Quorum(voting) || !led:
		return condition{metav1.ConditionFalse, api.ReasonNoQuorum, "no quorum: the cluster cannot serve writes"}
	}
	if reason, msg, ok := plan.WriteAlarm(s); ok {
		return condition{metav1.ConditionFalse, reason, msg}
	}
	if inSpec {
		return condition{metav1.ConditionTrue, api.ReasonClusterHealthy,
			fmt.Sprintf("%d of %d members healthy and voting", healthy, s.Size)}
	}
	return condition{metav1.ConditionTrue, api.ReasonQuorumHealthy, fmt.Sprintf(
		"serving: %d of %d voting members healthy, with a leader; %d members, %d wanted", healthy, voting, len(s.Members), s.Size)}
}

// progressing: the planner is changing the cluster toward its spec.
func progressing(paused bool, d plan.Decision) condition {
	switch {
	case paused:
		return condition{metav1.ConditionFalse, api.ReasonPaused, "spec.paused is set; no change is made"}
	case d.Progress != "":
		return condition{metav1.ConditionTrue, d.Progress, d.Message}
	case d.Blocked != "":
		// Nothing is being changed, and the cluster does not match its spec either.
		return condition{metav1.ConditionFalse, d.Blocked, "no change can be made now: see the Degraded condition"}
	default:
		return condition{metav1.ConditionFalse, api.ReasonReconciled, "the cluster matches its spec"}
	}
}

// degraded: a step is refused, a member is unhealthy, or the spec asks for what the operator
// does not do.
func degraded(s plan.State, d plan.Decision, specVersion, running string) condition {
	voting, healthy := plan.VotingCounts(s.Members)
	switch {
	case d.Blocked != "" && d.Report != "":
		return condition{metav1.ConditionTrue, d.Blocked, withForeign(d.Report, s.Foreign, d.Blocked)}
	case d.Blocked != "":
		return condition{metav1.ConditionTrue, d.Blocked, withForeign(d.Message, s.Foreign, d.Blocked)}
	case plan.Alarmed(s):
		reason, msg, _ := plan.WriteAlarm(s)
		return condition{metav1.ConditionTrue, reason, msg}
	case len(s.Foreign) > 0:
		return condition{metav1.ConditionTrue, api.ReasonForeignObject, plan.ForeignMessage(s.Foreign)}
	case s.TLS.Problem != nil:
		return condition{metav1.ConditionTrue, s.TLS.Problem.Reason, s.TLS.Problem.Message}
	case len(s.RefusedServices) > 0:
		return condition{metav1.ConditionTrue, api.ReasonPodRefused,
			"the API server refuses " + strings.Join(s.RefusedServices, "; ")}
	case pendingClaims(s) != "":
		// Before the pods: a pod waiting on its claim says less than the claim's Event.
		return condition{metav1.ConditionTrue, api.ReasonClaimPending, pendingClaims(s)}
	case plan.StuckPodsMessage(s) != "":
		return condition{metav1.ConditionTrue, api.ReasonPodCannotStart, plan.StuckPodsMessage(s)}
	case plan.StuckTerminatingMessage(s) != "":
		return condition{metav1.ConditionTrue, api.ReasonPodStuckTerminating, plan.StuckTerminatingMessage(s)}
	case s.MembersKnown && healthy < voting && plan.Rolling(d.Progress) && healthy >= plan.Quorum(voting):
		// Members the rollout restarts are down on purpose, one at a time; one that does not
		// come back within its bound blocks the rollout (RolloutStuck), above.
		return condition{metav1.ConditionFalse, api.ReasonAsExpected,
			fmt.Sprintf("%d of %d voting members restart for the rollout: %s", voting-healthy, voting, unhealthyMembers(s))}
	case s.MembersKnown && healthy < voting:
		return condition{metav1.ConditionTrue, api.ReasonMembersUnhealthy,
			fmt.Sprintf("%d of %d voting members are unhealthy: %s", voting-healthy, voting, unhealthyMembers(s))}
	case s.TLS.Expiring != "":
		return condition{metav1.ConditionTrue, api.ReasonCertificateExpiring, s.TLS.Expiring}
	case running != "" && plan.VersionProblem(running, member.NormalizeVersion(specVersion), s.Persistent) != "":
		return condition{metav1.ConditionTrue, api.ReasonVersionChangeUnsupported, fmt.Sprintf(
			"%s. Members, new ones included, keep running %s",
			plan.VersionProblem(running, member.NormalizeVersion(specVersion), s.Persistent), running)}
	default:
		return condition{metav1.ConditionFalse, api.ReasonAsExpected, "nothing is wrong"}
	}
}

// withForeign adds the foreign objects to a Degraded message about something else, so that
// a refused step does not hide them.
func withForeign(msg string, foreign []plan.ForeignObject, blocked api.ConditionReason) string {
	if len(foreign) == 0 || blocked == api.ReasonForeignObject {
		return msg
	}
	return msg + "; also " + plan.ForeignMessage(foreign)
}

// unhealthyMembers names the voting members that did not answer, each with what its pod says
// about why.
func unhealthyMembers(s plan.State) string {
	var out []string
	for _, m := range plan.SortedMembers(s.Members) {
		if m.Learner || m.Healthy {
			continue
		}
		name := member.Name(s.Name, m.Ordinal)
		if m.Ordinal < 0 {
			name = fmt.Sprintf("%x", m.ID)
		}
		out = append(out, name+" ("+plan.PodCondition(s.Pods, m.Ordinal)+")")
	}
	return strings.Join(out, ", ")
}

// pendingClaims names the claims that wait for a volume and say why (their latest Warning
// Event): a StorageClass that does not exist, a provisioner that fails. Empty when none does.
func pendingClaims(s plan.State) string {
	var out []string
	for _, o := range plan.SortedOrdinals(s.Claims) {
		if c := s.Claims[o]; !c.Bound && !c.Terminating && c.Problem != "" {
			out = append(out, fmt.Sprintf("claim %s waits for a volume (%s)", member.ClaimName(s.Name, o), c.Problem))
		}
	}
	return strings.Join(out, "; ")
}

func phase(paused bool, s plan.State, d plan.Decision, inSpec bool) api.ClusterPhase {
	switch {
	case paused:
		return api.PhasePaused
	case d.Progress == api.ReasonRecoveringQuorum:
		return api.PhaseRecovering
	case d.Blocked != "":
		return api.PhaseDegraded
	case !s.Bootstrapped && !s.MembersKnown:
		if len(s.Pods) == 0 && d.Action == nil {
			return api.PhasePending
		}
		return api.PhaseBootstrapping
	case d.Progress == api.ReasonReplacingMember || d.Progress == api.ReasonRestartingMember:
		return api.PhaseRecovering
	case plan.Rolling(d.Progress):
		return api.PhaseRollingOut
	case d.Progress != "":
		return api.PhaseScaling
	case plan.Alarmed(s), s.TLS.Problem != nil, s.TLS.Expiring != "":
		return api.PhaseDegraded
	case inSpec:
		return api.PhaseRunning
	default:
		return api.PhaseDegraded
	}
}
