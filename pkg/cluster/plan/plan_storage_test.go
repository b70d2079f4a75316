package plan

import (
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// claim is a bound claim of ordinal o marked with the member voter(o) (ID o+100).
func claim(o int) ClaimView { return ClaimView{Ordinal: o, Bound: true, MemberID: uint64(o + 100)} }

func unmarked(c ClaimView) ClaimView            { c.MemberID = 0; return c }
func markedBy(c ClaimView, id uint64) ClaimView { c.MemberID = id; return c }
func deleting(c ClaimView) ClaimView            { c.Terminating = true; return c }
func unbound(c ClaimView) ClaimView             { c.Bound, c.MemberID = false, 0; return c }
func outdated(c ClaimView) ClaimView            { c = unbound(c); c.Outdated = true; return c }
func lost(p PodView) PodView                    { p.DataLost = true; return p }

func claims(cs ...ClaimView) map[int]ClaimView {
	out := map[int]ClaimView{}
	for _, c := range cs {
		out[c.Ordinal] = c
	}
	return out
}

// onClaims is a cluster whose members keep their data on claims (whenScaled Delete).
func onClaims(s State) State {
	s.Persistent, s.DeleteScaledClaims = true, true
	if s.Claims == nil {
		s.Claims = claims()
	}
	return s
}

func TestPlanStorage(t *testing.T) {
	three := []MemberView{leader(0), voter(1), voter(2)}
	threeClaims := claims(claim(0), claim(1), claim(2))
	tests := []planCase{
		{
			name: "pod of a member gone, its claim holds its data: restart it in place, same ID",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1)), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 102},
			progress: api.ReasonRestartingMember,
		},
		{
			name: "claim not marked yet (the member was never seen listed with it): restart in place too",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1)), Claims: claims(claim(0), claim(1), unmarked(claim(2)))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 102},
			progress: api.ReasonRestartingMember,
		},
		{
			name: "old pod still terminating: wait for it, keep the member",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1), terminating(running(2, 0, 1, 2))), Claims: threeClaims}),
			progress: api.ReasonRestartingMember,
		},
		{
			name: "one old pod still going, another gone: the other is restarted meanwhile",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), sick(voter(1)), sick(voter(2))},
				Pods: pods(running(0), terminating(running(1, 0, 1))), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 102},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "nobody answers, one old pod still going: the others are restarted meanwhile",
			state:    onClaims(State{Size: 3, Bootstrapped: true, Pods: pods(terminating(running(0)), terminating(running(1, 0, 1))), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name: "two of three pods gone (no quorum): restart in place all the same",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), sick(voter(1)), sick(voter(2))},
				Pods: pods(running(0)), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: 101},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "every pod gone, nobody answers: restart the members whose claims hold data",
			state:    onClaims(State{Size: 3, Bootstrapped: true, Pods: pods(), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "nobody answers, one pod left: restart the others",
			state:    onClaims(State{Size: 3, Bootstrapped: true, Pods: pods(running(0)), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "cluster deleted with whenDeleted Retain and applied again: no status, marked claims: restart, never a new seed",
			state:    onClaims(State{Size: 3, Bootstrapped: true, Pods: pods(), Claims: threeClaims}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name:    "every pod and every claim gone: the data is lost, reported, never re-created empty",
			state:   onClaims(State{Size: 3, Bootstrapped: true, Pods: pods()}),
			blocked: api.ReasonNoQuorum,
		},
		{
			name: "claim deleted with its pod: the member's data is gone: remove it",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1)), Claims: claims(claim(0), claim(1))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "claim being deleted under a running member: remove the member",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: pods(running(0), running(1, 0, 1), running(2, 0, 1, 2)), Claims: claims(claim(0), claim(1), deleting(claim(2)))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "claim marked with another member (replaced by hand with an old one): remove the member",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1)), Claims: claims(claim(0), claim(1), markedBy(claim(2), 7))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "member-init found the data dir of a started member empty: remove the member",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1), lost(running(2, 0, 1, 2))), Claims: threeClaims}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "data lost on two of three: removing one would cost quorum: refused",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), sick(voter(1)), sick(voter(2))},
				Pods: pods(running(0), lost(running(1, 0, 1)), lost(running(2, 0, 1, 2))), Claims: threeClaims}),
			blocked: api.ReasonNoQuorum,
		},
		{
			name: "removed member's pod whose data was lost: deleted, not left in back-off",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1)},
				Pods: pods(running(0), running(1, 0, 1), lost(running(2, 0, 1, 2))), Claims: claims(claim(0), claim(1), unmarked(claim(2)))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "ordinal rejoining on a claim marked by its removed member: replace the claim first",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1)},
				Pods: pods(running(0), running(1, 0, 1)), Claims: threeClaims}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "its pod exists already: the pod goes first",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1)},
				Pods: pods(running(0), running(1, 0, 1), joining(2, false, 0, 1, 2)), Claims: threeClaims}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "the stale claim is going: wait, create nothing on it",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1)},
				Pods: pods(running(0), running(1, 0, 1)), Claims: claims(claim(0), claim(1), deleting(claim(2)))}),
			progress: api.ReasonScalingUp,
		},
		{
			name: "claim gone: create the pod (CreatePod makes a new claim)",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1)},
				Pods: pods(running(0), running(1, 0, 1)), Claims: claims(claim(0), claim(1))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name: "pod made ahead while a learner starts: a stale claim is replaced ahead too",
			state: onClaims(State{Size: 4, MembersKnown: true, Bootstrapped: true, Members: []MemberView{leader(0), voter(1), learner(2, false)},
				Pods: pods(running(0), running(1, 0, 1), joining(2, true, 0, 1, 2)), Claims: claims(claim(0), claim(1), claim(2), claim(3))}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 3},
			progress: api.ReasonScalingUp,
		},
		{
			name: "scaled down with whenScaled Delete: the removed member's claim goes once its pod has",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: pods(running(0), running(1, 0, 1), running(2, 0, 1, 2)), Claims: claims(claim(0), claim(1), claim(2), claim(3), claim(4))}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 3},
			progress: api.ReasonScalingDown,
		},
		{
			name: "scaled down with whenScaled Retain: the claims stay",
			state: func() State {
				s := onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
					Pods: pods(running(0), running(1, 0, 1), running(2, 0, 1, 2)), Claims: claims(claim(0), claim(1), claim(2), claim(3))})
				s.DeleteScaledClaims = false
				return s
			}(),
		},
		{
			name: "scaled down, the removed member's pod still there: the pod goes first",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: pods(running(0), running(1, 0, 1), running(2, 0, 1, 2), running(3, 0, 1, 2, 3)), Claims: claims(claim(0), claim(1), claim(2), claim(3))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 3},
			progress: api.ReasonScalingDown,
		},
		{
			name:     "seed's claim made from a spec.storage fixed since, never bound: its pod goes",
			state:    onClaims(State{Size: 3, Pods: pods(stuckPod(seedPod(false))), Claims: claims(outdated(claim(0)))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 0},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "then the claim",
			state:    onClaims(State{Size: 3, Pods: pods(), Claims: claims(outdated(claim(0)))}),
			want:     &Action{Kind: ActionDeleteClaim, Ordinal: 0},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "an unbound claim that matches the spec is kept: its pod waits for a volume",
			state:    onClaims(State{Size: 3, Pods: pods(stuckPod(seedPod(false))), Claims: claims(unbound(claim(0)))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1}},
			progress: api.ReasonBootstrapping,
		},
		{
			name: "a bound claim is never replaced for a spec change",
			state: onClaims(State{Size: 3, MembersKnown: true, Bootstrapped: true, Members: three,
				Pods: pods(running(0), running(1, 0, 1), running(2, 0, 1, 2)), Claims: claims(claim(0), claim(1), func() ClaimView { c := claim(2); c.Outdated = true; return c }())}),
		},
	}
	runPlanCases(t, tests)
}
