package plan_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan" // the tables are in plan_test to build with plantest (export_test.go)
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

// learnerListed is a cluster of three growing to four whose learner 3 (ID 103) has not
// started, status listing ordinal 3 as a learner of the given ID during a scale-up.
func learnerListed(listedID uint64) State {
	return State{Size: 4, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2), learner(3, false)},
		Pods:        plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2), plantest.Running(3, 0, 1, 2, 3)),
		LastMembers: append(plantest.LastVoters(0, 1, 2), LastMember{Ordinal: 3, ID: listedID, Learner: true}), LastProgress: api.ReasonScalingUp}
}

func learner(o int, healthy bool) MemberView {
	m := plantest.Voter(o)
	m.Learner, m.Healthy = true, healthy
	if !healthy {
		m.Name = ""
	}
	return m
}

func terminating(p PodView) PodView { p.Terminating = true; return p }

func TestPlan(t *testing.T) {
	three := plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2))
	tests := []planCase{
		{
			name:     "new cluster: create the seed",
			state:    State{Size: 3, Pods: plantest.Pods()},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: "new", InitialCluster: []int{0}},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "seed pod just created: prepare the second pod alongside (its member-init waits for DNS)",
			state:    State{Size: 3, Pods: plantest.Pods(plantest.SeedPod(false))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1}},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "seed pod starting and published: prepare the second pod",
			state:    State{Size: 3, Pods: plantest.Pods(plantest.SeedPod(true))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1}},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "seed pod starting, second pod there: prepare the third",
			state:    State{Size: 3, Pods: plantest.Pods(plantest.SeedPod(false), plantest.Joining(1, false, 0, 1))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "seed pod starting, every pod there: wait",
			state:    State{Size: 3, Pods: plantest.Pods(plantest.SeedPod(false), plantest.Joining(1, false, 0, 1), plantest.Joining(2, false, 0, 1, 2))},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "seed pod starting, the second pod going: prepare nothing after it",
			state:    State{Size: 3, Pods: plantest.Pods(plantest.SeedPod(false), terminating(plantest.Joining(1, false, 0, 1)))},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "seed pod going away: prepare nothing",
			state:    State{Size: 3, Pods: plantest.Pods(terminating(plantest.SeedPod(true)))},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "seed of a one-member cluster: nothing to prepare",
			state:    State{Size: 1, Pods: plantest.Pods(plantest.SeedPod(true))},
			progress: api.ReasonBootstrapping,
		},
		{
			name:    "bootstrapped cluster with every pod gone: never re-bootstrap",
			state:   State{Size: 3, Bootstrapped: true, Pods: plantest.Pods()},
			blocked: api.ReasonNoQuorum,
		},
		{
			name:    "bootstrapped, pods there, nobody answers: wait",
			state:   State{Size: 3, Bootstrapped: true, Pods: three},
			blocked: api.ReasonEtcdUnreachable,
		},
		{
			name:  "in spec: nothing to do",
			state: State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, Pods: three},
		},
		{
			name:     "grow: create the next pod before registering its member",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0)}, Pods: plantest.Pods(plantest.Running(0))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: pod not yet in DNS, wait",
			state:    State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, false, 0, 1))},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow by two: while the first pod starts, create the second",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, false, 0, 1))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow by three: every pod ahead, each counting the ones before it",
			state:    State{Size: 4, MembersKnown: true, Members: []MemberView{plantest.Leader(0)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, false, 0, 1), plantest.Joining(2, false, 0, 1, 2))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 3, ClusterState: "existing", InitialCluster: []int{0, 1, 2, 3}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow by three: every pod there, wait for the first",
			state:    State{Size: 4, MembersKnown: true, Members: []MemberView{plantest.Leader(0)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, false, 0, 1), plantest.Joining(2, false, 0, 1, 2), plantest.Joining(3, false, 0, 1, 2, 3))},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow into a gap: the pod ahead skips members",
			state:    State{Size: 4, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, false, 0, 1, 2), plantest.Running(2, 0, 2))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 3, ClusterState: "existing", InitialCluster: []int{0, 1, 2, 3}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: pod published, add it as a learner",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, true, 0, 1))},
			want:     &Action{Kind: ActionAddLearner, Ordinal: 1},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: learner starting: prepare the next pod, add no member",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), learner(1, false)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, true, 0, 1))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: learner starting, next pod ready: wait (no second member)",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), learner(1, false)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, true, 0, 1), plantest.Joining(2, true, 0, 1, 2))},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: learner not confirmed in DNS: the next pod is prepared all the same (its member-init waits for DNS)",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), learner(1, false)}, Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, false, 0, 1))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: learner's pod going away: remove the learner, prepare nothing",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), learner(1, false)}, Pods: plantest.Pods(plantest.Running(0), terminating(plantest.Joining(1, true, 0, 1)))},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 1, MemberID: 101},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: learner started, promote it",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), learner(1, true)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1))},
			want:     &Action{Kind: ActionPromote, Ordinal: 1, MemberID: 101},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: the learner a scale-up added, listed by status, is still the scale-up",
			state:    learnerListed(103),
			progress: api.ReasonScalingUp,
		},
		{
			name: "replace: the learner replacing a lost member, listed by status, is still the replacement",
			state: State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), learner(1, false), plantest.Voter(2)},
				Pods:        plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1, 2), plantest.Running(2, 0, 1, 2)),
				LastMembers: []LastMember{{Ordinal: 0, ID: 100}, {Ordinal: 1, ID: 101, Learner: true}, {Ordinal: 2, ID: 102}}, LastProgress: api.ReasonReplacingMember},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "replace: a learner of another ID than status listed replaces it, whatever status said",
			state:    learnerListed(999),
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "grow: pod built for an older membership is replaced",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Joining(2, true, 0, 2))},
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: a seed-style pod never joins an existing cluster",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Voter(1), plantest.Leader(2)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2))},
			want:     &Action{Kind: ActionDeletePod, Ordinal: 0},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "grow: an unschedulable pod does not block another ordinal",
			state:    State{Size: 4, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), plantest.StuckPod(plantest.Joining(1, false, 0, 1, 2)), plantest.Running(2, 0, 2))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 3, ClusterState: "existing", InitialCluster: []int{0, 2, 3}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "an unschedulable scale-up pod does not stop a repair: remove the lost member",
			state:    State{Size: 4, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(2, 0, 1, 2), plantest.StuckPod(plantest.Joining(3, false, 0, 1, 2, 3))), LastMembers: []LastMember{{Ordinal: 1}}},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 1, MemberID: 101},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "an unschedulable scale-up pod does not stop a repair: re-create the lost member",
			state:    State{Size: 4, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(2, 0, 1, 2), plantest.StuckPod(plantest.Joining(3, false, 0, 1, 2, 3))), LastMembers: []LastMember{{Ordinal: 1}}},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "shrink: remove the highest ordinal",
			state:    State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, Pods: three},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingDown,
		},
		{
			name:     "shrink: move leadership off the member first",
			state:    State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Voter(0), plantest.Voter(1), plantest.Leader(2)}, Pods: three},
			want:     &Action{Kind: ActionMoveLeader, Ordinal: 2, MemberID: 102, Transferee: 100},
			progress: api.ReasonScalingDown,
		},
		{
			name:     "shrink: then delete the removed member's pod",
			state:    State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)}, Pods: three},
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingDown,
		},
		{
			name:    "shrink: refused when the members left would lack a majority",
			state:   State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Voter(2)}, Pods: three},
			blocked: api.ReasonQuorumAtRisk,
		},
		{
			name:    "no quorum: change nothing",
			state:   State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Voter(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))}, Pods: three},
			blocked: api.ReasonNoQuorum,
		},
		{
			name:     "replace: a voting member whose pod is gone is removed first",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(2, 0, 1, 2)), LastMembers: []LastMember{{Ordinal: 1}}},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 1, MemberID: 101},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "replace: then re-added under the same name",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(2, 0, 1, 2)), LastMembers: []LastMember{{Ordinal: 1}}},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "replace: the lost seed leader",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Sick(plantest.Voter(0)), plantest.Leader(1), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)), LastMembers: []LastMember{{Ordinal: 0}}},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 0, MemberID: 100},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "replace: failed pod is deleted",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), PodView{Ordinal: 1, Phase: corev1.PodFailed}, plantest.Running(2, 0, 1, 2))},
			want:     &Action{Kind: ActionDeletePod, Ordinal: 1},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "learner whose pod vanished is removed (learners never count for quorum)",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, false)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1))},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "scale down while a learner is pending removes the learner",
			state:    State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, true)}, Pods: three},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingDown,
		},
		{
			name:     "scale down while a pod waits to join deletes the pod",
			state:    State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Joining(2, false, 0, 1, 2))},
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingDown,
		},
		{
			name:    "foreign member: refuse to touch membership",
			state:   State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), {Ordinal: -1, ID: 7, Healthy: true}}, Pods: plantest.Pods(plantest.Running(0))},
			blocked: api.ReasonInvalidSpec,
		},
		{
			name:     "terminating pod of a member: remove the member, wait for the pod to go",
			state:    State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, Pods: plantest.Pods(plantest.Running(0), PodView{Ordinal: 1, Terminating: true, Phase: corev1.PodRunning}, plantest.Running(2, 0, 1, 2)), LastMembers: []LastMember{{Ordinal: 1}}},
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 1, MemberID: 101},
			progress: api.ReasonReplacingMember,
		},
		{
			name:     "single member cluster scaled to 1 from 2 moves leadership",
			state:    State{Size: 1, MembersKnown: true, Members: []MemberView{plantest.Voter(0), plantest.Leader(1)}, Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1))},
			want:     &Action{Kind: ActionMoveLeader, Ordinal: 1, MemberID: 101, Transferee: 100},
			progress: api.ReasonScalingDown,
		},
	}
	runPlanCases(t, tests)
}

// planCase is one row of a planner table: the state, and the action, Progressing reason and
// Blocked reason the planner must decide on, with the strings its message or report says.
type planCase struct {
	name     string
	state    State
	want     *Action
	progress api.ConditionReason
	blocked  api.ConditionReason
	message  []string
}

// runPlanCases plans each case's state (of a cluster named c) and checks the decision.
func runPlanCases(t *testing.T, tests []planCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.state.Name = "c"
			d := Plan(tc.state)
			if !sameAction(d.Action, tc.want) {
				t.Errorf("action = %+v, want %+v (message %q)", d.Action, tc.want, d.Message)
			}
			if d.Progress != tc.progress {
				t.Errorf("progress = %q, want %q (message %q)", d.Progress, tc.progress, d.Message)
			}
			if d.Blocked != tc.blocked {
				t.Errorf("blocked = %q, want %q (message %q)", d.Blocked, tc.blocked, d.Message)
			}
			if (d.Progress != "" || d.Blocked != "") && d.Message == "" {
				t.Errorf("decision without a message: %+v", d)
			}
			for _, want := range tc.message {
				if !strings.Contains(d.Message+" "+d.Report, want) {
					t.Errorf("message %q, report %q: neither says %q", d.Message, d.Report, want)
				}
			}
		})
	}
}

// TestPlanNeverLosesQuorum walks every small cluster state and checks that no removal the
// planner proposes leaves fewer healthy voters than a majority.
func TestPlanNeverLosesQuorum(t *testing.T) {
	for n := 1; n <= 5; n++ {
		for mask := 0; mask < 1<<n; mask++ {
			for size := 1; size <= 5; size++ {
				var ms []MemberView
				ps := map[int]PodView{}
				for o := 0; o < n; o++ {
					m := plantest.Voter(o)
					m.Healthy = mask&(1<<o) != 0
					m.Leader = o == 0 && m.Healthy
					ms = append(ms, m)
					ps[o] = plantest.Running(o, seq(o+1)...)
				}
				d := Plan(State{Name: "c", Size: size, MembersKnown: true, Members: ms, Pods: ps})
				if d.Action == nil || d.Action.Kind != ActionRemoveMember {
					continue
				}
				voting, healthy := VotingCounts(ms)
				for _, m := range ms {
					if m.ID == d.Action.MemberID && m.Healthy {
						healthy--
					}
				}
				if healthy < Quorum(voting-1) {
					t.Errorf("n=%d mask=%b size=%d: removal of %d leaves %d healthy of %d", n, mask, size, d.Action.Ordinal, healthy, voting-1)
				}
			}
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func sameAction(a, b *Action) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || a.Ordinal != b.Ordinal || a.MemberID != b.MemberID || a.Transferee != b.Transferee ||
		a.ClusterState != b.ClusterState || a.RaftIndex != b.RaftIndex || a.Version != b.Version || a.Evict != b.Evict {
		return false
	}
	if len(a.InitialCluster) != len(b.InitialCluster) {
		return false
	}
	for i := range a.InitialCluster {
		if a.InitialCluster[i] != b.InitialCluster[i] {
			return false
		}
	}
	return true
}
