package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// passAt is the time of the passes in the stuck-pod tables.
var passAt = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// troubled gives a pod a problem that began ago before passAt.
func troubled(p PodView, reason, message string, ago time.Duration) PodView {
	p.Problem = &PodProblem{Reason: reason, Message: message, Since: passAt.Add(-ago)}
	return p
}

func pullFails(p PodView, ago time.Duration) PodView {
	return troubled(p, "ImagePullBackOff", `container etcd: Back-off pulling image "nope/etcd:v3.6.16"`, ago)
}

func crashLoops(p PodView, ago time.Duration) PodView {
	return troubled(p, ReasonCrashLoop, "container etcd restarted 4 times, last exit code 1: member removed", ago)
}

// goneSince is a pod terminating whose grace period ended ago before passAt.
func goneSince(p PodView, node string, ago time.Duration) PodView {
	p.Terminating, p.Node, p.DeletionDeadline = true, node, passAt.Add(-ago)
	return p
}

func TestPlanStuckPods(t *testing.T) {
	at := func(s State) State { s.Now = passAt; return s }
	runPlanCases(t, []planCase{
		{
			name: "grow: a published pod that cannot pull its image is not added as a learner",
			state: at(State{Size: 2, MembersKnown: true, Members: []MemberView{leader(0)},
				Pods: pods(running(0), pullFails(joining(1, true, 0, 1), time.Second))}),
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for pod c-1", "ImagePullBackOff", "nope/etcd"},
		},
		{
			name:     "a member's claim deleted before its pod had a node: the pod waits for it past the bound, the member is replaced",
			state:    claimGone(StuckAfter, true),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name:  "... within the bound (a claim the cache may not show yet): nothing",
			state: claimGone(StuckAfter-time.Second, true),
		},
		{
			name:     "a joining pod whose claim is gone, waiting for it past the bound: made again, with a claim",
			state:    claimGone(StuckAfter, false),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
			message:  []string{"deleting pod c-2, whose claim is gone"},
		},
		{
			name: "the seed that cannot start, the spec fixed since, the cluster never served: its pod goes, to bootstrap again",
			state: at(State{Size: 3, Pods: pods(func() PodView {
				p := pullFails(running(0), time.Minute)
				p.Phase, p.Outdated = corev1.PodPending, true
				return p
			}(), joining(1, false, 0, 1))}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 0},
			progress: api.ReasonBootstrapping,
			message:  []string{"seed's pod c-0", "earlier spec"},
		},
		{
			name: "the seed's etcd crash-loops (it ran, it may have served), the spec changed since: not deleted",
			state: at(State{Size: 3, Pods: pods(func() PodView {
				p := crashLoops(running(0), time.Minute)
				p.Outdated = true
				return p
			}(), joining(1, false, 0, 1), joining(2, false, 0, 1, 2))}),
			progress: api.ReasonBootstrapping,
		},
		{
			name: "the seed that cannot start, the spec unchanged: waited for (and reported)",
			state: at(State{Size: 3, Pods: pods(func() PodView {
				p := pullFails(running(0), time.Minute)
				p.Phase = corev1.PodPending
				return p
			}(), joining(1, false, 0, 1), joining(2, false, 0, 1, 2))}),
			progress: api.ReasonBootstrapping,
		},
		{
			name: "grow: a joining pod that cannot start, built from a spec changed since (the fix): made again",
			state: at(State{Size: 2, MembersKnown: true, Members: []MemberView{leader(0)},
				Pods: pods(running(0), func() PodView {
					p := pullFails(joining(1, true, 0, 1), time.Minute)
					p.Outdated = true
					return p
				}())}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 1},
			progress: api.ReasonScalingUp,
			message:  []string{"deleting pod c-1", "earlier spec"},
		},
		{
			name: "grow: a pod that cannot start does not hold back the next ordinal",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0)},
				Pods: pods(running(0), pullFails(joining(1, true, 0, 1), time.Minute), joining(2, true, 0, 2))}),
			want:     &Action{Kind: ActionAddLearner, Ordinal: 2},
			progress: api.ReasonScalingUp,
		},
		{
			name: "grow: a pod stuck terminating does not hold back the next ordinal",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0)},
				Pods: pods(running(0), goneSince(joining(1, true, 0, 1), "worker-1", time.Hour))}),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name: "a learner whose pod cannot start, past the bound, is removed",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), learner(2, false)},
				Pods: pods(running(0), running(1, 0, 1), pullFails(joining(2, true, 0, 1, 2), StuckAfter))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
			message:  []string{"never started", "ImagePullBackOff"},
		},
		{
			name: "a learner whose pod cannot start, within the bound, is waited for",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), learner(2, false)},
				Pods: pods(running(0), running(1, 0, 1), pullFails(joining(2, true, 0, 1, 2), StuckAfter-time.Second))}),
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for learner c-2"},
		},
		{
			name: "a voting member crash-looping past the bound is removed, to be added again",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1), crashLoops(running(2, 0, 1, 2), StuckAfter))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
			message:  []string{"crash-loops", "member removed"},
		},
		{
			name:     "a member rolled onto a spec the others are not on yet crash-loops: not replaced, the rollout waits for it",
			state:    rolledCrashLoop(comebackBound-time.Second, false),
			progress: api.ReasonRollingPods,
			message:  []string{"waiting for member c-2", "crash-loops", "election-timeout"},
		},
		{
			name:    "... and past the rollout's bound: the rollout stops and says why, still nobody is replaced",
			state:   rolledCrashLoop(comebackBound+time.Second, false),
			blocked: api.ReasonRolloutStuck,
			message: []string{"member c-2 did not come back", "crash-loops", "election-timeout", "spec.pod"},
		},
		{
			name:     "the spec set back: the crash-looping member's pod is out of date and is rolled back onto its data, not replaced",
			state:    rolledCrashLoop(comebackBound+time.Second, true),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonRollingPods,
			message:  []string{"c-2", "on its data"},
		},
		{
			name: "every pod out of date (a new operator's template, not rolled yet), one member crash-loops: replaced, the others run that spec",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: func() map[int]PodView {
					ps := pods(running(0), running(1, 0, 1), crashLoops(running(2, 0, 1, 2), StuckAfter))
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
			name: "a voting member crash-looping within the bound is left alone",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1), crashLoops(running(2, 0, 1, 2), StuckAfter-time.Second))}),
		},
		{
			name: "a voting member crash-looping without quorum is not replaced",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{voter(0), sick(voter(1)), sick(voter(2))},
				Pods: pods(running(0), crashLoops(running(1, 0, 1), time.Hour), crashLoops(running(2, 0, 1, 2), time.Hour))}),
			blocked: api.ReasonNoQuorum,
		},
		{
			name: "a voting member restarting in place (a new pod, not crash-looping) is left alone",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1), joining(2, true, 0, 1, 2))}),
		},
		{
			name: "the pod of a removed member goes before its ordinal joins again",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1)},
				Pods: pods(running(0), running(1, 0, 1), func() PodView {
					p := crashLoops(running(2, 0, 1, 2), time.Hour)
					p.MemberID = 102
					return p
				}())}),
			want:     &Action{Kind: ActionDeletePod, Ordinal: 2},
			progress: api.ReasonScalingUp,
			message:  []string{"ran a member that was removed"},
		},
		{
			name: "grow: only the terminating pod is left: wait for it",
			state: at(State{Size: 2, MembersKnown: true, Members: []MemberView{leader(0)},
				Pods: pods(running(0), goneSince(joining(1, true, 0, 1), "worker-1", time.Hour))}),
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
		{"the only member", []MemberView{sick(leader(0))}, 0, false},
		{"two others healthy of three", []MemberView{leader(0), voter(1), sick(voter(2))}, 2, true},
		{"one other healthy of three", []MemberView{leader(0), sick(voter(1)), sick(voter(2))}, 2, false},
		{"a joining pod, two voters healthy", []MemberView{leader(0), voter(1)}, 2, true},
		{"three others healthy of five", []MemberView{leader(0), voter(1), voter(2), sick(voter(3)), sick(voter(4))}, 4, true},
	} {
		if got := othersKeepQuorum(State{Members: tc.members}, tc.o); got != tc.want {
			t.Errorf("%s: othersKeepQuorum = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// rolledCrashLoop is a pod-policy rollout on claims whose first member, c-2, crash-loops on the
// new spec (a value etcd refuses) since it was rolled, age ago. setBack: the spec was set back
// since, so c-2's pod is the out-of-date one.
func rolledCrashLoop(age time.Duration, setBack bool) State {
	p := troubled(running(2, 0, 1, 2), ReasonCrashLoop,
		"container etcd restarted 4 times, last exit code 1: --election-timeout[20ms] should be at least as 5 times as --heartbeat-interval[100ms]", StuckAfter)
	p.Created = passAt.Add(-age)
	others := []PodView{running(0), running(1, 0, 1)}
	if setBack {
		p.Outdated = true
	} else {
		for i := range others {
			others[i].Outdated = true
		}
	}
	return State{Size: 3, MembersKnown: true, Bootstrapped: true, Persistent: true, Now: passAt,
		Members:  []MemberView{leader(0), voter(1), sick(voter(2))},
		Pods:     pods(others[0], others[1], p),
		Statuses: map[int]etcdutil.Status{0: reporting(0, "", 1000), 1: reporting(1, "", 1000)},
		Claims:   map[int]ClaimView{}}
}

// claimGone is a cluster on claims whose member (or, not member, joining pod) c-2 has no
// claim, and whose pod the scheduler has reported unschedulable for ago: it waits for the
// claim.
func claimGone(ago time.Duration, isMember bool) State {
	members := []MemberView{leader(0), voter(1)}
	if isMember {
		members = append(members, sick(voter(2)))
	}
	p := troubled(joining(2, false, 0, 1, 2), "Unschedulable", `0/1 nodes are available: persistentvolumeclaim "data-c-2" not found.`, ago)
	return State{Size: 3, MembersKnown: true, Bootstrapped: true, Persistent: true, Now: passAt, Members: members,
		Pods:   pods(running(0), running(1, 0, 1), p),
		Claims: map[int]ClaimView{0: {Ordinal: 0, Bound: true, MemberID: 100}, 1: {Ordinal: 1, Bound: true, MemberID: 101}}}
}
