package plan_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// crashLoops gives a pod etcd's crash loop, not ready for ago, its container down since.
func crashLoops(p PodView, ago time.Duration) PodView {
	p = plantest.Troubled(p, ReasonCrashLoop, "container etcd restarted 4 times since it was last ready, last exit code 1: member removed", ago)
	p.Problem.Exited = p.Problem.Since
	return p
}

// crashLoopsExited is a pod that has not been ready for long, whose etcd crash-loops and last
// exited exitedAgo (zero: it runs again).
func crashLoopsExited(exitedAgo time.Duration) PodView {
	p := crashLoops(plantest.Running(2, 0, 1, 2), 10*time.Minute)
	p.Problem.Exited = time.Time{}
	if exitedAgo > 0 {
		p.Problem.Exited = plantest.PassAt.Add(-exitedAgo)
	}
	return p
}

func TestPlanStuckPods(t *testing.T) {
	at := func(s State) State { s.Now = plantest.PassAt; return s }
	runPlanCases(t, []planCase{
		{
			name: "grow: a published pod that cannot pull its image is not added as a learner",
			state: at(State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0)},
				Pods: plantest.Pods(plantest.Running(0), plantest.PullFails(plantest.Joining(1, true, 0, 1), time.Second))}),
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for pod c-1", "ImagePullBackOff", "nope/etcd"},
		},
		{
			name:     "a member's claim deleted before its pod had a node: the pod waits for it past the bound, the member is replaced",
			state:    claimGone(DefaultStuckAfter, true),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name:  "... within the bound (a claim the cache may not show yet): nothing",
			state: claimGone(DefaultStuckAfter-time.Second, true),
		},
		{
			name:     "a joining pod whose claim is gone, waiting for it past the bound: made again, with a claim",
			state:    claimGone(DefaultStuckAfter, false),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
			message:  []string{"deleting pod c-2, whose claim is gone"},
		},
		{
			name: "the seed that cannot start, the spec fixed since, the cluster never served: its pod goes, to bootstrap again",
			state: at(State{Size: 3, Pods: plantest.Pods(func() PodView {
				p := plantest.PullFails(plantest.Running(0), time.Minute)
				p.Phase, p.Outdated = corev1.PodPending, true
				return p
			}(), plantest.Joining(1, false, 0, 1))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 0},
			progress: api.ReasonBootstrapping,
			message:  []string{"seed's pod c-0", "earlier spec"},
		},
		{
			name: "the seed's etcd crash-loops (it ran, it may have served), the spec changed since: not deleted",
			state: at(State{Size: 3, Pods: plantest.Pods(func() PodView {
				p := crashLoops(plantest.Running(0), time.Minute)
				p.Outdated = true
				return p
			}(), plantest.Joining(1, false, 0, 1), plantest.Joining(2, false, 0, 1, 2))}),
			progress: api.ReasonBootstrapping,
		},
		{
			name: "the seed that cannot start, the spec unchanged: waited for (and reported)",
			state: at(State{Size: 3, Pods: plantest.Pods(func() PodView {
				p := plantest.PullFails(plantest.Running(0), time.Minute)
				p.Phase = corev1.PodPending
				return p
			}(), plantest.Joining(1, false, 0, 1), plantest.Joining(2, false, 0, 1, 2))}),
			progress: api.ReasonBootstrapping,
		},
		{
			name: "grow: a joining pod that cannot start, built from a spec changed since (the fix): made again",
			state: at(State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0)},
				Pods: plantest.Pods(plantest.Running(0), func() PodView {
					p := plantest.PullFails(plantest.Joining(1, true, 0, 1), time.Minute)
					p.Outdated = true
					return p
				}())}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 1},
			progress: api.ReasonScalingUp,
			message:  []string{"deleting pod c-1", "earlier spec"},
		},
		{
			name: "grow: a pod that cannot start does not hold back the next ordinal",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0)},
				Pods: plantest.Pods(plantest.Running(0), plantest.PullFails(plantest.Joining(1, true, 0, 1), time.Minute), plantest.Joining(2, true, 0, 2))}),
			want:     &Action{Kind: ActionAddLearner, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "grow: a pod stuck terminating does not hold back the next ordinal",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0)},
				Pods: plantest.Pods(plantest.Running(0), plantest.GoneSince(plantest.Joining(1, true, 0, 1), "worker-1", time.Hour))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name: "a learner whose pod cannot start, past the bound, is removed",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, false)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.PullFails(plantest.Joining(2, true, 0, 1, 2), DefaultStuckAfter))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
			message:  []string{"never started", "ImagePullBackOff"},
		},
		{
			name: "a learner whose pod cannot start, within the bound, is waited for",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, false)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.PullFails(plantest.Joining(2, true, 0, 1, 2), DefaultStuckAfter-time.Second))}),
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for learner c-2"},
		},
		{
			name: "a voting member crash-looping past the bound is removed, to be added again",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), crashLoops(plantest.Running(2, 0, 1, 2), DefaultStuckAfter))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
			message:  []string{"crash-loops", "member removed"},
		},
		{
			name:     "a member rolled onto a spec the others are not on yet crash-loops: not replaced, the rollout waits for it",
			state:    rolledCrashLoop(DefaultComebackBound-time.Second, false),
			progress: api.ReasonRollingPods,
			message:  []string{"waiting for member c-2", "crash-loops", "election-timeout"},
		},
		{
			name:    "... and past the rollout's bound: the rollout stops and says why, still nobody is replaced",
			state:   rolledCrashLoop(DefaultComebackBound+time.Second, false),
			blocked: api.ReasonRolloutStuck,
			message: []string{"member c-2 did not come back", "crash-loops", "election-timeout", "spec.pod"},
		},
		{
			name:     "the spec set back: the crash-looping member's pod is out of date and is rolled back onto its data, not replaced",
			state:    rolledCrashLoop(DefaultComebackBound+time.Second, true),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonRollingPods,
			message:  []string{"c-2", "on its data"},
		},
		{
			name: "every pod out of date (a new operator's template, not rolled yet), one member crash-loops: replaced, the others run that spec",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: func() map[int]PodView {
					ps := plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), crashLoops(plantest.Running(2, 0, 1, 2), DefaultStuckAfter))
					for o, p := range ps {
						p.Outdated = true
						ps[o] = p
					}
					return ps
				}()}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonRollingPods,
			message:  []string{"removing member c-2: its pod crash-loops", "0 of 3 members done"},
		},
		{
			name: "a crash-looping member whose etcd runs again (starting: replaying its log, waiting for its peers) is not replaced",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), crashLoopsExited(0))}),
		},
		{
			name: "... nor one whose etcd exited within the bound",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), crashLoopsExited(DefaultStuckAfter-time.Second))}),
		},
		{
			name: "... and once etcd has been down for the bound, it is",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), crashLoopsExited(DefaultStuckAfter))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name: "a crash-looping member whose etcd answers is not replaced",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), crashLoopsExited(time.Hour))}),
		},
		{
			name: "a voting member crash-looping within the bound is left alone",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), crashLoops(plantest.Running(2, 0, 1, 2), DefaultStuckAfter-time.Second))}),
		},
		{
			name: "a voting member crash-looping without quorum is not replaced",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Voter(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), crashLoops(plantest.Running(1, 0, 1), time.Hour), crashLoops(plantest.Running(2, 0, 1, 2), time.Hour))}),
			blocked: api.ReasonNoQuorum,
		},
		{
			name: "a voting member restarting in place (a new pod, not crash-looping) is left alone",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Joining(2, true, 0, 1, 2))}),
		},
		{
			name: "the pod of a removed member goes before its ordinal joins again",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), func() PodView {
					p := crashLoops(plantest.Running(2, 0, 1, 2), time.Hour)
					p.MemberID = 102
					return p
				}())}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
			message:  []string{"ran a member that was removed"},
		},
		{
			name: "grow: only the terminating pod is left: wait for it",
			state: at(State{Size: 2, MembersKnown: true, Members: []MemberView{plantest.Leader(0)},
				Pods: plantest.Pods(plantest.Running(0), plantest.GoneSince(plantest.Joining(1, true, 0, 1), "worker-1", time.Hour))}),
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for the old pod c-1 to go"},
		},
	})
}

// The claim-deleting hint is only for a member whose data is not the last copy.
func TestOthersKeepQuorum(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []MemberView
		o       int
		want    bool
	}{
		{"the only member", []MemberView{plantest.Sick(plantest.Leader(0))}, 0, false},
		{"two others healthy of three", []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))}, 2, true},
		{"one other healthy of three", []MemberView{plantest.Leader(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))}, 2, false},
		{"a joining pod, two voters healthy", []MemberView{plantest.Leader(0), plantest.Voter(1)}, 2, true},
		{"three others healthy of five", []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2), plantest.Sick(plantest.Voter(3)), plantest.Sick(plantest.Voter(4))}, 4, true},
	} {
		if got := OthersKeepQuorum(State{Members: tc.members}, tc.o); got != tc.want {
			t.Errorf("%s: othersKeepQuorum = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// rolledCrashLoop is a pod-policy rollout on claims whose first member, c-2, crash-loops on the
// new spec (a value etcd refuses) since it was rolled, age ago. setBack: the spec was set back
// since, so c-2's pod is the out-of-date one.
func rolledCrashLoop(age time.Duration, setBack bool) State {
	p := plantest.Troubled(plantest.Running(2, 0, 1, 2), ReasonCrashLoop,
		"container etcd restarted 4 times since it was last ready, last exit code 1: --election-timeout[20ms] should be at least as 5 times as --heartbeat-interval[100ms]", DefaultStuckAfter)
	p.Problem.Exited = p.Problem.Since
	p.Created = plantest.PassAt.Add(-age)
	others := []PodView{plantest.Running(0), plantest.Running(1, 0, 1)}
	if setBack {
		p.Outdated = true
	} else {
		for i := range others {
			others[i].Outdated = true
		}
	}
	return State{Size: 3, MembersKnown: true, Bootstrapped: true, Persistent: true, Now: plantest.PassAt,
		Members:  []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
		Pods:     plantest.Pods(others[0], others[1], p),
		Statuses: map[int]etcdutil.Status{0: plantest.Reporting(0, "", 1000), 1: plantest.Reporting(1, "", 1000)},
		Claims:   map[int]ClaimView{}}
}

// claimGone is a cluster on claims whose member (or, not member, joining pod) c-2 has no
// claim, and whose pod the scheduler has reported unschedulable for ago: it waits for the
// claim.
func claimGone(ago time.Duration, isMember bool) State {
	members := []MemberView{plantest.Leader(0), plantest.Voter(1)}
	if isMember {
		members = append(members, plantest.Sick(plantest.Voter(2)))
	}
	p := plantest.Troubled(plantest.Joining(2, false, 0, 1, 2), "Unschedulable", `0/1 nodes are available: persistentvolumeclaim "data-c-2" not found.`, ago)
	return State{Size: 3, MembersKnown: true, Bootstrapped: true, Persistent: true, Now: plantest.PassAt, Members: members,
		Pods:   plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), p),
		Claims: map[int]ClaimView{0: {Ordinal: 0, Bound: true, MemberID: 100}, 1: {Ordinal: 1, Bound: true, MemberID: 101}}}
}
