package plan_test

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

func withRecovery(s State, change func(*QuorumLossView)) State { change(&s.Recovery); return s }

func TestPlanQuorumLoss(t *testing.T) {
	// Three members; the claims of c-1 and c-2 were deleted with their pods; c-0 answers.
	twoGone := plantest.LostQuorum(3, plantest.Pods(plantest.Running(0, 0, 1, 2)), plantest.Claims(plantest.Claim(0)), plantest.Answering(0, 42))
	// Five members; c-2, c-3 and c-4 lost their claims; c-0 and c-1 answer.
	threeGone := func(index0, index1 int) State {
		return plantest.LostQuorum(5, plantest.Pods(plantest.Running(0, 0, 1, 2, 3, 4), plantest.Running(1, 0, 1, 2, 3, 4)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)),
			plantest.Answering(0, index0, 1, index1))
	}
	all := []int{0, 1, 2, 3, 4}
	tests := []planCase{
		{
			name:    "Manual, no annotation: the loss is reported with the survivor, its index and the command; nothing is done",
			state:   twoGone,
			blocked: api.ReasonQuorumLost,
			message: []string{"c-0 (raft index 42, term 3)", "c-1 (its claim is gone)", "kubectl annotate etcdcluster c etcd.operator.dev/recover-quorum=c-0"},
		},
		{
			name: "claims being deleted, replaced by empty ones, or holding another member's data (whose own data is gone too): gone for good",
			state: plantest.LostQuorum(5, plantest.Pods(plantest.Running(0, all...), plantest.Joining(1, false, all...), lost(plantest.Joining(4, false, all...))),
				plantest.Claims(plantest.Claim(0), plantest.Claim(1), deleting(plantest.Claim(2)), unmarked(plantest.Claim(3)), plantest.MarkedBy(plantest.Claim(4), 7)), plantest.Answering(0, 42)),
			blocked: api.ReasonQuorumLost,
			message: []string{"3 of 5", "c-2 (its claim is being deleted)", "c-3 (its claim is a new one)", "c-4 (its claim holds another member's data)",
				"c-1 (does not answer yet)"},
		},
		{
			name: "data dirs found empty by member-init on two of three: gone for good",
			state: plantest.LostQuorum(3, plantest.Pods(plantest.Running(0, 0, 1, 2), lost(plantest.Joining(1, false, 0, 1, 2)), lost(plantest.Joining(2, false, 0, 1, 2))),
				plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2)), plantest.Answering(0, 42)),
			blocked: api.ReasonQuorumLost,
			message: []string{"c-1 (its data dir is empty)"},
		},
		{
			name:     "annotation highest: the survivor with the highest raft index is chosen and written down",
			state:    withRecovery(threeGone(40, 42), func(r *QuorumLossView) { r.RecoverFrom = "highest" }),
			want:     &Action{Kind: ActionChooseSurvivor, Ordinal: 1, MemberID: 101, RaftIndex: 42},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
			message:  []string{"recovering from c-1 (raft index 42)"},
		},
		{
			name: "highest, but a member whose data may be left does not answer (its node down): wait for it, say which",
			state: withRecovery(plantest.LostQuorum(5, plantest.Pods(plantest.Running(0, all...), plantest.Running(1, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)),
				plantest.Answering(0, 40)), func(r *QuorumLossView) { r.RecoverFrom = "highest" }),
			blocked: api.ReasonQuorumLost,
			message: []string{"waiting for c-1 (etcd does not answer at its pod)", "may hold writes", "recover-quorum=c-0"},
		},
		{
			name: "FromSurvivor past its grace, a member whose data may be left does not answer: wait for it too",
			state: withRecovery(plantest.LostQuorum(5, plantest.Pods(plantest.Running(0, all...), plantest.Running(1, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)),
				plantest.Answering(0, 40)), func(r *QuorumLossView) {
				r.Policy, r.Grace, r.Since = api.QuorumLossFromSurvivor, time.Minute, plantest.PassAt.Add(-time.Hour)
			}),
			blocked: api.ReasonQuorumLost,
			message: []string{"waiting for c-1"},
		},
		{
			name:     "a tie: the lowest ordinal",
			state:    withRecovery(threeGone(42, 42), func(r *QuorumLossView) { r.RecoverFrom = "highest" }),
			want:     &Action{Kind: ActionChooseSurvivor, Ordinal: 0, MemberID: 100, RaftIndex: 42},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name:  "annotation names a survivor: its pod is deleted, to restart it with --force-new-cluster",
			state: withRecovery(threeGone(40, 42), func(r *QuorumLossView) { r.RecoverFrom = "c-0" }),
			want: &Action{Kind: ActionForceNewCluster, Ordinal: 0, MemberID: 100, RaftIndex: 40,
				ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: all},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
			message:  []string{"recovering from c-0 (raft index 40)"},
		},
		{
			name: "its old pod is going: wait",
			state: withRecovery(plantest.LostQuorum(5, plantest.Pods(terminating(plantest.Running(0, all...)), plantest.Running(1, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)), plantest.Answering(1, 42)),
				func(r *QuorumLossView) { r.RecoverFrom = "c-0" }),
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name: "its pod is gone: made again with --force-new-cluster on its data, never restarted without",
			state: withRecovery(plantest.LostQuorum(5, plantest.Pods(plantest.Running(1, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)), plantest.Answering(1, 42)),
				func(r *QuorumLossView) { r.RecoverFrom = "c-0" }),
			want: &Action{Kind: ActionForceNewCluster, Ordinal: 0, MemberID: 100,
				ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: all},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name:    "annotation names a member whose data is gone: refused",
			state:   withRecovery(threeGone(40, 42), func(r *QuorumLossView) { r.RecoverFrom = "c-3" }),
			blocked: api.ReasonQuorumLost,
			message: []string{"names c-3, which is not a survivor (its claim is gone)"},
		},
		{
			name:    "annotation names no member: refused",
			state:   withRecovery(threeGone(40, 42), func(r *QuorumLossView) { r.RecoverFrom = "other-0" }),
			blocked: api.ReasonQuorumLost,
			message: []string{"names other-0, which is not a survivor"},
		},
		{
			name: "annotation names a member whose etcd does not answer yet: wait for it",
			state: withRecovery(plantest.LostQuorum(5, plantest.Pods(plantest.Running(0, all...), plantest.Joining(1, false, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)), plantest.Answering(0, 40)),
				func(r *QuorumLossView) { r.RecoverFrom = "c-1" }),
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name: "FromSurvivor within its grace period: reported, with the time left",
			state: withRecovery(threeGone(40, 42), func(r *QuorumLossView) {
				r.Policy, r.Since = api.QuorumLossFromSurvivor, time.Date(2026, 1, 1, 11, 59, 0, 0, time.UTC)
			}),
			blocked: api.ReasonQuorumLost,
			message: []string{"FromSurvivor", "in 4m0s"},
		},
		{
			name: "FromSurvivor, the loss first seen now: the whole grace period is left",
			state: withRecovery(threeGone(40, 42), func(r *QuorumLossView) {
				r.Policy = api.QuorumLossFromSurvivor
			}),
			blocked: api.ReasonQuorumLost,
			message: []string{"in 5m0s"},
		},
		{
			name: "FromSurvivor past its grace period: the survivor with the highest index is chosen",
			state: withRecovery(threeGone(40, 42), func(r *QuorumLossView) {
				r.Policy, r.Since = api.QuorumLossFromSurvivor, time.Date(2026, 1, 1, 11, 55, 0, 0, time.UTC)
			}),
			want:     &Action{Kind: ActionChooseSurvivor, Ordinal: 1, MemberID: 101, RaftIndex: 42},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name: "going ahead, a member whose data is left has no pod: it is restarted first, to learn its index",
			state: withRecovery(plantest.LostQuorum(5, plantest.Pods(plantest.Running(0, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)), plantest.Answering(0, 40)),
				func(r *QuorumLossView) { r.RecoverFrom = "highest" }),
			want: &Action{Kind: ActionCreatePod, Ordinal: 1, MemberID: 101,
				ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: []int{0, 1}},
			progress: api.ReasonRestartingMember,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name: "a survivor starts with --force-new-cluster: wait, and never force a second one",
			state: withRecovery(plantest.LostQuorum(5, plantest.Pods(plantest.Forced(plantest.Joining(0, false, all...)), plantest.Running(1, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)), plantest.Answering(1, 42)),
				func(r *QuorumLossView) { r.RecoverFrom = "c-1" }),
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name: "the survivor answers alone in the member list: its pod goes, to drop --force-new-cluster",
			state: plantest.OnClaims(State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []MemberView{plantest.Leader(1)},
				Pods: plantest.Pods(plantest.Forced(plantest.Running(1, 0, 1, 2)), lost(plantest.Joining(0, false, 0, 1, 2))), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 1},
			progress: api.ReasonRecoveringQuorum,
		},
		{
			name: "a pod with --force-new-cluster beside a cluster that answers without it: it goes",
			state: plantest.OnClaims(State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Forced(plantest.Joining(2, false, 0, 1, 2))), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonRecoveringQuorum,
		},
		{
			name: "then it restarts in place without the flag, never on a lost member's leftover claim",
			state: plantest.OnClaims(State{Size: 3, Bootstrapped: true, LastMembers: plantest.LastVoters(1), Pods: plantest.Pods(),
				Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1))}),
			want: &Action{Kind: ActionCreatePod, Ordinal: 1, MemberID: 101,
				ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: []int{1}},
			progress: api.ReasonRestartingMember,
		},
		{
			name: "grown back: a lost member's leftover pod goes first",
			state: plantest.OnClaims(State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []MemberView{plantest.Leader(1)},
				Pods: plantest.Pods(plantest.Running(1, 1), lost(plantest.Joining(0, false, 0, 1, 2))), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1)), LastMembers: []LastMember{{Ordinal: 0}}}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 0},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "then its claim, which holds the lost member's data",
			state: plantest.OnClaims(State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []MemberView{plantest.Leader(1)},
				Pods: plantest.Pods(plantest.Running(1, 1)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1)), LastMembers: []LastMember{{Ordinal: 0}}}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 0},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "then it joins as a new member, through the learner path",
			state: plantest.OnClaims(State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []MemberView{plantest.Leader(1)},
				Pods: plantest.Pods(plantest.Running(1, 1)), Claims: plantest.Claims(plantest.Claim(1)), LastMembers: []LastMember{{Ordinal: 0}}}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: []int{0, 1}},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "pods merely starting on claims that hold their data: not a quorum loss",
			state: plantest.LostQuorum(3, plantest.Pods(plantest.Running(0, 0, 1, 2), plantest.Joining(1, false, 0, 1, 2), plantest.Joining(2, false, 0, 1, 2)),
				plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2)), plantest.Answering(0, 42)),
			progress: api.ReasonElectingLeader, // for DefaultElectionBound; then NoQuorum (TestPlanNoLeader)
		},
		{
			name:     "pods gone, claims that hold their data: restarted as members that have started, not a quorum loss",
			state:    plantest.LostQuorum(3, plantest.Pods(plantest.Running(0, 0, 1, 2)), plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2)), plantest.Answering(0, 42)),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, MemberID: 101, ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			// Seen on the real node: the first member was removed (quorum held), then the
			// second went. Of two voters, one lost is a quorum lost for good.
			name:    "one of two gone for good: reported",
			state:   plantest.LostQuorum(2, plantest.Pods(plantest.Running(0, 0, 1)), plantest.Claims(plantest.Claim(0)), plantest.Answering(0, 42)),
			blocked: api.ReasonQuorumLost,
		},
		{
			name:    "two of four gone for good: reported",
			state:   plantest.LostQuorum(4, plantest.Pods(plantest.Running(0, 0, 1, 2, 3), plantest.Running(1, 0, 1, 2, 3)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)), plantest.Answering(0, 42, 1, 41)),
			blocked: api.ReasonQuorumLost,
		},
		{
			name:     "two of five gone for good: quorum may come back, not a quorum loss",
			state:    plantest.LostQuorum(5, plantest.Pods(plantest.Running(0, all...), plantest.Running(1, all...), plantest.Joining(2, false, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2)), plantest.Answering(0, 40)),
			progress: api.ReasonElectingLeader, // for DefaultElectionBound; then NoQuorum (TestPlanNoLeader)
		},
		{
			name:    "every member's claim gone: all data lost, reported, nothing re-created",
			state:   withRecovery(plantest.LostQuorum(3, plantest.Pods(), plantest.Claims(), nil), func(r *QuorumLossView) { r.RecoverFrom = "highest" }),
			blocked: api.ReasonNoQuorum,
			message: []string{"all data lost", "c-0 (its claim is gone)"},
		},
		{
			name: "every data dir found empty, pods still there: all data lost",
			state: plantest.LostQuorum(3, plantest.Pods(lost(plantest.Running(0, 0, 1, 2)), lost(plantest.Joining(1, false, 0, 1, 2)), lost(plantest.Joining(2, false, 0, 1, 2))),
				plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2)), nil),
			blocked: api.ReasonNoQuorum,
			message: []string{"all data lost"},
		},
		{
			name: "emptyDir: no recovery from a survivor (a pod's data goes with it)",
			state: func() State {
				s := twoGone
				s.Persistent = false
				return s
			}(),
			progress: api.ReasonElectingLeader, // for DefaultElectionBound; then NoQuorum (TestPlanNoLeader)
		},
	}
	runPlanCases(t, tests)
}

// A survivor forced into a cluster of one restarts on the etcd it ran (status last listed it
// on 3.6.16), not on a spec.version raised to 3.7.3 while quorum was lost: 3.7 replaying the
// log of an older release is what the rollout's replacement rule exists to avoid.
func TestForcedSurvivorKeepsItsVersion(t *testing.T) {
	all := []int{0, 1, 2, 3, 4}
	s := withRecovery(plantest.LostQuorum(5, plantest.Pods(plantest.Running(1, all...)), plantest.Claims(plantest.Claim(0), plantest.Claim(1)), plantest.Answering(1, 42)),
		func(r *QuorumLossView) { r.RecoverFrom = "c-0" })
	s.Name, s.TargetVersion = "c", "3.7.3"
	for i := range s.LastMembers {
		s.LastMembers[i].Version = "3.6.16"
	}
	d := Plan(s)
	if d.Action == nil || d.Action.Kind != ActionForceNewCluster || d.Action.Ordinal != 0 {
		t.Fatalf("Plan = %+v, want c-0 made again with --force-new-cluster", d)
	}
	if d.Action.PodVersion != "3.6.16" {
		t.Errorf("the survivor's pod is built with etcd %q, want the 3.6.16 it ran", d.Action.PodVersion)
	}
	s.LastMembers[0].Version = ""
	if d := Plan(s); d.Action == nil || d.Action.PodVersion != "3.7.3" {
		t.Errorf("with no version known for the survivor: %+v, want the target 3.7.3", d.Action)
	}
}
