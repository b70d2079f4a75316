package plan_test

import (
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

func unmarked(c ClaimView) ClaimView { c.MemberID = 0; return c }
func deleting(c ClaimView) ClaimView { c.Terminating = true; return c }
func outdated(c ClaimView) ClaimView { c = plantest.Unbound(c); c.Outdated = true; return c }
func lost(p PodView) PodView         { p.DataLost = true; return p }

func TestPlanStorage(t *testing.T) {
	three := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	threeClaims := plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2))
	tests := []planCase{
		{
			name: "pod of a member gone, its claim holds its data: restart it in place, same ID",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1)), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 102},
			progress: api.ReasonRestartingMember,
		},
		{
			name: "claim not marked yet (the member was never seen listed with it): restart in place too",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), unmarked(plantest.Claim(2)))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 102},
			progress: api.ReasonRestartingMember,
		},
		{
			name: "old pod still terminating: wait for it, keep the member",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), terminating(plantest.Running(2, 0, 1, 2))), Claims: threeClaims}),
			progress: api.ReasonRestartingMember,
		},
		{
			name: "one old pod still going, another gone: the other is restarted meanwhile",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), terminating(plantest.Running(1, 0, 1))), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 102},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "nobody answers, one old pod still going: the others are restarted meanwhile",
			state:    plantest.OnClaims(State{Size: 3, Bootstrapped: true, Pods: plantest.Pods(terminating(plantest.Running(0)), terminating(plantest.Running(1, 0, 1))), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name: "two of three pods gone (no quorum): restart in place all the same",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0)), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 101},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "every pod gone, nobody answers: restart the members whose claims hold data",
			state:    plantest.OnClaims(State{Size: 3, Bootstrapped: true, Pods: plantest.Pods(), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "nobody answers, one pod left: restart the others",
			state:    plantest.OnClaims(State{Size: 3, Bootstrapped: true, Pods: plantest.Pods(plantest.Running(0)), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "cluster deleted with whenDeleted Retain and applied again: no status, marked claims: restart, never a new seed",
			state:    plantest.OnClaims(State{Size: 3, Bootstrapped: true, Pods: plantest.Pods(), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name:    "every pod and every claim gone: the data is lost, reported, never re-created empty",
			state:   plantest.OnClaims(State{Size: 3, Bootstrapped: true, Pods: plantest.Pods()}),
			blocked: api.ReasonNoQuorum,
		},
		{
			name: "claim deleted with its pod: the member's data is gone: remove it",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "claim being deleted under a running member: remove the member",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), deleting(plantest.Claim(2)))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "claims deleted under two running members: the first is removed",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), deleting(plantest.Claim(1)), deleting(plantest.Claim(2)))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 1, MemberID: 101},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "the first removed, the second still answers on its doomed claim: kept until the first is back (grow first)",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(2)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(2, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), deleting(plantest.Claim(2)))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name: "a doomed member whose pod is gone holds no copy: removed even while another is missing",
			state: plantest.OnClaims(State{Size: 5, MembersKnown: true, Bootstrapped: true,
				Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2), plantest.Sick(plantest.Voter(3))},
				Pods:    plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 3, MemberID: 103},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "claim marked with another member (replaced by hand with an old one): remove the member",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.MarkedBy(plantest.Claim(2), 7))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "member-init found the data dir of a started member empty: remove the member",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), lost(plantest.Running(2, 0, 1, 2))), Claims: threeClaims}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "data lost on two of three: removing one would cost quorum: refused",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), lost(plantest.Running(1, 0, 1)), lost(plantest.Running(2, 0, 1, 2))), Claims: threeClaims}),
			blocked: api.ReasonNoQuorum,
		},
		{
			name: "removed member's pod whose data was lost: deleted, not left in back-off",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), lost(plantest.Running(2, 0, 1, 2))), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), unmarked(plantest.Claim(2)))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "ordinal rejoining on a claim marked by its removed member: replace the claim first",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1)), Claims: threeClaims}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "its pod exists already: the pod goes first",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Joining(2, false, 0, 1, 2)), Claims: threeClaims}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "the stale claim is going: wait, create nothing on it",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), deleting(plantest.Claim(2)))}),
			progress: api.ReasonScalingUp,
		},
		{
			name: "claim gone: create the pod (CreatePod makes a new claim)",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name: "pod made ahead while a learner starts: a stale claim is replaced ahead too",
			state: plantest.OnClaims(State{Size: 4, MembersKnown: true, Bootstrapped: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, false)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Joining(2, true, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2), plantest.Claim(3))}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 3},
			progress: api.ReasonScalingUp,
		},
		{
			name: "scaled down with whenScaled Delete: the removed member's claim goes once its pod has",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2), plantest.Claim(3), plantest.Claim(4))}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 3},
			progress: api.ReasonScalingDown,
		},
		{
			name: "scaled down with whenScaled Retain: the claims stay",
			state: func() State {
				s := plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
					Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2), plantest.Claim(3))})
				s.DeleteScaledClaims = false
				return s
			}(),
		},
		{
			name: "scaled down, the removed member's pod still there: the pod goes first",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2), plantest.Running(3, 0, 1, 2, 3)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2), plantest.Claim(3))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 3},
			progress: api.ReasonScalingDown,
		},
		{
			name:     "seed's claim made from a spec.storage fixed since, never bound: its pod goes",
			state:    plantest.OnClaims(State{Size: 3, Pods: plantest.Pods(plantest.StuckPod(plantest.SeedPod(false))), Claims: plantest.Claims(outdated(plantest.Claim(0)))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 0},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "then the claim",
			state:    plantest.OnClaims(State{Size: 3, Pods: plantest.Pods(), Claims: plantest.Claims(outdated(plantest.Claim(0)))}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 0},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "an unbound claim that matches the spec is kept: its pod waits for a volume",
			state:    plantest.OnClaims(State{Size: 3, Pods: plantest.Pods(plantest.StuckPod(plantest.SeedPod(false))), Claims: plantest.Claims(plantest.Unbound(plantest.Claim(0)))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1}},
			progress: api.ReasonBootstrapping,
		},
		{
			name: "a bound claim is never replaced for a spec change",
			state: plantest.OnClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)), Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), func() ClaimView { c := plantest.Claim(2); c.Outdated = true; return c }())}),
		},
	}
	runPlanCases(t, tests)
}
