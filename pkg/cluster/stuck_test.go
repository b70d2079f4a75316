package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
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
			state:    claimGone(stuckAfter, true),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonReplacingMember,
		},
		{
			name:  "... within the bound (a claim the cache may not show yet): nothing",
			state: claimGone(stuckAfter-time.Second, true),
		},
		{
			name:     "a joining pod whose claim is gone, waiting for it past the bound: made again, with a claim",
			state:    claimGone(stuckAfter, false),
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
				Pods: pods(running(0), running(1, 0, 1), pullFails(joining(2, true, 0, 1, 2), stuckAfter))}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
			message:  []string{"never started", "ImagePullBackOff"},
		},
		{
			name: "a learner whose pod cannot start, within the bound, is waited for",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), learner(2, false)},
				Pods: pods(running(0), running(1, 0, 1), pullFails(joining(2, true, 0, 1, 2), stuckAfter-time.Second))}),
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for learner c-2"},
		},
		{
			name: "a voting member crash-looping past the bound is removed, to be added again",
			state: at(State{Size: 3, MembersKnown: true, Members: []MemberView{leader(0), voter(1), sick(voter(2))},
				Pods: pods(running(0), running(1, 0, 1), crashLoops(running(2, 0, 1, 2), stuckAfter))}),
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
					ps := pods(running(0), running(1, 0, 1), crashLoops(running(2, 0, 1, 2), stuckAfter))
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
				Pods: pods(running(0), running(1, 0, 1), crashLoops(running(2, 0, 1, 2), stuckAfter-time.Second))}),
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

func TestStatusStuckPods(t *testing.T) {
	c := newCluster(3)
	c.Name = "c"
	healthy2 := []MemberView{leader(0), voter(1)}
	for _, tc := range []struct {
		name     string
		pod      PodView
		degraded api.ConditionReason
		message  []string
	}{
		{"image pull failing, within the bound", pullFails(joining(2, true, 0, 1, 2), stuckAfter-time.Second),
			api.ReasonAsExpected, nil},
		{"image pull failing, past the bound", pullFails(joining(2, true, 0, 1, 2), stuckAfter),
			api.ReasonPodCannotStart, []string{"pod c-2 cannot start since", "ImagePullBackOff", `Back-off pulling image "nope/etcd:v3.6.16"`}},
		{"unschedulable past the bound", troubled(joining(2, false, 0, 1, 2), "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", time.Minute),
			api.ReasonPodCannotStart, []string{"Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."}},
		{"terminating within its grace period and the bound", goneSince(joining(2, true, 0, 1, 2), "w", stuckAfter-time.Second),
			api.ReasonAsExpected, nil},
		{"terminating long past its grace period", goneSince(joining(2, true, 0, 1, 2), "worker-2", time.Hour),
			api.ReasonPodStuckTerminating, []string{"pod c-2 has been terminating since", "on node worker-2",
				"kubectl delete pod -n ns c-2 --force --grace-period=0", "kubectl delete node worker-2", "does not force-delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := State{Name: "c", Namespace: "ns", Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy2,
				Pods: pods(running(0), running(1, 0, 1), tc.pod), Now: passAt}
			deg := meta.FindStatusCondition(computeStatus(c, s, Plan(s)).Conditions, string(api.ConditionDegraded))
			if deg == nil || deg.Reason != string(tc.degraded) {
				t.Fatalf("Degraded = %+v, want reason %s", deg, tc.degraded)
			}
			for _, want := range tc.message {
				if !strings.Contains(deg.Message, want) {
					t.Errorf("Degraded message %q does not say %q", deg.Message, want)
				}
			}
		})
	}
}

// A member pod held on a node-local volume's node is named with what the user can do about it;
// the hint is not given where it does not apply.
func TestStatusVolumeNodeConflict(t *testing.T) {
	c := newCluster(3)
	c.Name = "c"
	conflict := troubled(joining(2, false, 0, 1, 2), "Unschedulable",
		"0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 node(s) didn't match pod anti-affinity rules.", time.Minute)
	cpu := troubled(joining(2, false, 0, 1, 2), "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", time.Minute)
	healthy := []MemberView{leader(0), voter(1)}
	for _, tc := range []struct {
		name       string
		persistent bool
		members    []MemberView
		pod        PodView
		hint       bool
	}{
		{"claims, volume node conflict", true, healthy, conflict, true},
		{"claims, another reason", true, healthy, cpu, false},
		{"emptyDir", false, healthy, conflict, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := State{Name: "c", Namespace: "ns", Size: 3, Bootstrapped: true, MembersKnown: true, Persistent: tc.persistent,
				Members: tc.members, Pods: pods(running(0), running(1, 0, 1), tc.pod), Now: passAt}
			deg := meta.FindStatusCondition(computeStatus(c, s, Plan(s)).Conditions, string(api.ConditionDegraded))
			if deg == nil || deg.Reason != string(api.ReasonPodCannotStart) {
				t.Fatalf("Degraded = %+v, want PodCannotStart", deg)
			}
			if got := strings.Contains(deg.Message, "kubectl delete pvc -n ns data-c-2"); got != tc.hint {
				t.Errorf("Degraded message %q: names the claim to delete = %v, want %v", deg.Message, got, tc.hint)
			}
		})
	}
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

// podProblem reads the kubelet's and the scheduler's words from the pod, with the time the
// trouble began from the pod's own timestamps.
func TestPodProblem(t *testing.T) {
	created := metav1.NewTime(passAt.Add(-time.Hour))
	notReady := metav1.NewTime(passAt.Add(-time.Minute))
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-1", CreationTimestamp: created},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: notReady}}}}
	}
	etcd := func(st corev1.ContainerStatus) *corev1.Pod {
		p := base()
		st.Name = member.EtcdContainerName
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		return p
	}
	failed := &corev1.ContainerStateTerminated{ExitCode: 2, Message: "panic: member removed"}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		reason string
		says   string
		since  time.Time
	}{
		{"running and ready", etcd(corev1.ContainerStatus{Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), "", "", time.Time{}},
		{"image pull back-off", etcd(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope"`}}}), "ImagePullBackOff", `Back-off pulling image "nope"`, notReady.Time},
		{"config error", etcd(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CreateContainerConfigError", Message: `secret "s" not found`}}}), "CreateContainerConfigError", `secret "s" not found`, notReady.Time},
		{"still creating", etcd(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ContainerCreating"}}}), "", "", time.Time{}},
		{"crashed twice: not yet a loop", etcd(corev1.ContainerStatus{RestartCount: 2, LastTerminationState: corev1.ContainerState{Terminated: failed},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonCrashLoop}}}), "", "", time.Time{}},
		{"crash loop, waiting", etcd(corev1.ContainerStatus{RestartCount: 5, LastTerminationState: corev1.ContainerState{Terminated: failed},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonCrashLoop}}}), ReasonCrashLoop, "restarted 5 times, last exit code 2: panic: member removed", notReady.Time},
		{"crash loop: the end of a long log is kept, where etcd says why it exited", etcd(corev1.ContainerStatus{RestartCount: 3,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
				Message: strings.Repeat(`{"level":"info","msg":"member-init: the member has started before"}`+"\n", 20) +
					`{"level":"warn","msg":"failed to verify flags","error":"--election-timeout[200ms] should be at least as 5 times as --heartbeat-interval[100ms]"}`}},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonCrashLoop}}}), ReasonCrashLoop,
			`"error":"--election-timeout[200ms] should be at least as 5 times as --heartbeat-interval[100ms]"}`, notReady.Time},
		{"crash loop, briefly running", etcd(corev1.ContainerStatus{RestartCount: 5, LastTerminationState: corev1.ContainerState{Terminated: failed},
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), ReasonCrashLoop, "member removed", notReady.Time},
		{"unschedulable", func() *corev1.Pod {
			p := base()
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available", LastTransitionTime: notReady})
			return p
		}(), "Unschedulable", "0/1 nodes are available", notReady.Time},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podProblem(tc.pod)
			if tc.reason == "" {
				if got != nil {
					t.Fatalf("problem %+v, want none", got)
				}
				return
			}
			if got == nil || got.Reason != tc.reason || !strings.Contains(got.Message, tc.says) || !got.Since.Equal(tc.since) {
				t.Fatalf("problem %+v, want %s saying %q since %s", got, tc.reason, tc.says, tc.since)
			}
		})
	}
}

// expectRefused checks the one status write of a pass: Degraded PodRefused, naming what and
// quoting the API server's quota message. It returns the written cluster.
func expectRefused(t *testing.T, f *fixture, what string) *api.EtcdCluster {
	t.Helper()
	updates := f.actions("update", "etcdclusters")
	if len(updates) != 1 {
		t.Fatalf("%d status writes, want 1", len(updates))
	}
	written := updates[0].(k8stesting.UpdateAction).GetObject().(*api.EtcdCluster)
	deg := meta.FindStatusCondition(written.Status.Conditions, string(api.ConditionDegraded))
	if deg == nil || deg.Status != metav1.ConditionTrue || deg.Reason != string(api.ReasonPodRefused) ||
		!strings.Contains(deg.Message, what) || !strings.Contains(deg.Message, "exceeded quota: q") {
		t.Errorf("Degraded = %+v, want PodRefused naming %q with the API server's message", deg, what)
	}
	return written
}

// A pod the API server refuses is reported (Degraded PodRefused with the API server's words,
// one Warning), and the pass does not hot-loop on it.
func TestSyncPodRefused(t *testing.T) {
	c := newCluster(3)
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	creates := 0
	f.kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "demo-0",
			errorString(`exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`))
	})
	requeue, err := f.r.Sync(context.Background(), "ns", "demo")
	if err != nil {
		t.Fatalf("Sync: %v; a refusal is reported, not retried as an error", err)
	}
	if requeue < whileRefused {
		t.Errorf("requeue in %s after a refusal, want at least %s", requeue, whileRefused)
	}
	written := expectRefused(t, f, "creating seed member demo-0")
	warnings := func() int {
		n := 0
		for len(f.recorder.Events) > 0 {
			if e := <-f.recorder.Events; strings.Contains(e, string(EventPodRefused)) {
				n++
			}
		}
		return n
	}
	if n := warnings(); n != 1 {
		t.Errorf("%d PodRefused events, want 1", n)
	}
	// The next pass, from the written status: refused again, said no more.
	_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Update(written)
	f.client.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("second Sync: %v", err)
	}
	if n := len(f.actions("update", "etcdclusters")); n != 0 {
		t.Errorf("second pass wrote status %d times, want 0", n)
	}
	if n := warnings(); n != 0 {
		t.Errorf("second pass recorded %d more PodRefused events", n)
	}
	if creates != 2 {
		t.Errorf("%d creates, want one per pass", creates)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// A member pod stuck terminating (its node stopped answering) holds back no other ordinal:
// the next pod is made, and Degraded says what only the user can do.
func TestSyncStuckTerminatingHoldsBackNothing(t *testing.T) {
	c := newCluster(3)
	c.Status.Size = 1
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: member.PeerServiceName(c.Name)}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	seed := memberPod(c, 0, "10.244.0.9", corev1.PodRunning, time.Now().Add(-time.Hour), slice)
	gone := memberPod(c, 1, "10.244.0.10", corev1.PodRunning, time.Now().Add(-time.Hour), slice)
	gone.DeletionTimestamp = ptr.To(metav1.NewTime(time.Now().Add(-10 * time.Minute)))
	gone.Spec.NodeName = "worker-1"
	f := newFixture(t, c, seed, gone, slice, member.PeerService(c), member.ClientService(c))
	f.with(func(d *Deps) { d.Etcd = newFakeEtcd(t, c, "10.244.0.9") })
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	creates := f.actions("create", "pods")
	if len(creates) != 1 || creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name != "demo-2" {
		t.Fatalf("created %d pods, want demo-2 while demo-1 is stuck terminating", len(creates))
	}
	st := f.actions("update", "etcdclusters")[0].(k8stesting.UpdateAction).GetObject().(*api.EtcdCluster).Status
	deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded))
	if deg == nil || deg.Reason != string(api.ReasonPodStuckTerminating) ||
		!strings.Contains(deg.Message, "kubectl delete pod -n ns demo-1 --force --grace-period=0") {
		t.Errorf("Degraded = %+v, want PodStuckTerminating saying what to run", deg)
	}
}

// removingEtcd is the fake etcd that also removes members, recording the IDs.
type removingEtcd struct {
	*fakeEtcd
	removed []uint64
}

func (e *removingEtcd) New([]string, etcdutil.ConnConfig) (etcdutil.Client, error) {
	return removingClient{fakeEtcdClient{e.fakeEtcd}, e}, nil
}

type removingClient struct {
	fakeEtcdClient
	e *removingEtcd
}

func (c removingClient) MemberRemove(_ context.Context, id uint64) error {
	c.e.removed = append(c.e.removed, id)
	return nil
}

// A voting member whose pod crash-loops past the bound is removed (to be added again), while
// the two others keep quorum; the removal names why.
func TestSyncReplacesCrashLoopingMember(t *testing.T) {
	c := newCluster(3)
	c.Status.Size = 3
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: member.PeerServiceName(c.Name)}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	var objs []runtime.Object
	etcd := &removingEtcd{fakeEtcd: &fakeEtcd{t: t, status: map[string]etcdutil.Status{}}}
	for o := range 3 {
		ip := fmt.Sprintf("10.244.0.%d", 10+o)
		p := memberPod(c, o, ip, corev1.PodRunning, time.Now().Add(-time.Hour), slice)
		id := uint64(o + 1)
		etcd.members = append(etcd.members, etcdutil.Member{ID: id, Name: p.Name, PeerURLs: []string{member.PeerURL(c.Name, c.Namespace, o)}})
		if o < 2 {
			etcd.status[member.PodClientURL(ip)] = etcdutil.Status{ID: id, Leader: 1, Version: "3.6.16"}
		} else {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
				LastTransitionTime: metav1.NewTime(time.Now().Add(-2 * stuckAfter))}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: member.EtcdContainerName, RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonCrashLoop}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: "panic: invalid database"}}}}
		}
		objs = append(objs, p)
	}
	objs = append(objs, c, slice, member.PeerService(c), member.ClientService(c))
	f := newFixture(t, objs...)
	f.with(func(d *Deps) { d.Etcd = etcd })
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if len(etcd.removed) != 1 || etcd.removed[0] != 3 {
		t.Fatalf("removed %v, want demo-2 (3)", etcd.removed)
	}
	var said bool
	for len(f.recorder.Events) > 0 {
		e := <-f.recorder.Events
		said = said || (strings.Contains(e, string(EventMemberRemoved)) && strings.Contains(e, "crash-loops") && strings.Contains(e, "invalid database"))
	}
	if !said {
		t.Error("no MemberRemoved Event says the member's pod crash-loops, with its last words")
	}
}

// A member Service the API server refuses (a quota on Services) stops neither the pass nor
// the other members: the seed's pod is made, Degraded says which Service is refused and
// why, and waiting passes do not ask again before whileRefused.
func TestSyncMemberServiceRefused(t *testing.T) {
	c := newCluster(3)
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	f.kube.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(*corev1.Service).Name != "demo-2" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "demo-2",
			errorString(`exceeded quota: q, requested: services=1, used: services=4, limited: services=4`))
	})
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v; a refused Service is reported, not retried as an error", err)
	}
	if pods := f.actions("create", "pods"); len(pods) != 1 {
		t.Errorf("created %d pods, want the seed's", len(pods))
	}
	written := expectRefused(t, f, "service demo-2")

	// A waiting pass (the seed's pod made, nothing to do until it starts) backs off.
	_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Update(written)
	for _, a := range f.actions("create", "pods") {
		_ = f.kinf.Core().V1().Pods().Informer().GetIndexer().Add(a.(k8stesting.CreateAction).GetObject())
	}
	for _, a := range f.actions("create", "services") {
		if svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service); svc.Name != "demo-2" {
			_ = f.kinf.Core().V1().Services().Informer().GetIndexer().Add(svc)
		}
	}
	f.kube.ClearActions()
	for range 2 { // the second pod is made ahead, then the pass waits
		requeue, err := f.r.Sync(context.Background(), "ns", "demo")
		if err != nil {
			t.Fatalf("Sync: %v", err)
		}
		for _, a := range f.actions("create", "pods") {
			_ = f.kinf.Core().V1().Pods().Informer().GetIndexer().Add(a.(k8stesting.CreateAction).GetObject())
		}
		f.kube.ClearActions()
		_ = requeue
	}
	requeue, err := f.r.Sync(context.Background(), "ns", "demo")
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("create", "pods")); n != 0 {
		t.Fatalf("the last pass created %d pods, want a waiting pass", n)
	}
	if requeue < whileRefused {
		t.Errorf("a waiting pass with a refused Service requeues in %s, want at least %s", requeue, whileRefused)
	}
}

// rolledCrashLoop is a pod-policy rollout on claims whose first member, c-2, crash-loops on the
// new spec (a value etcd refuses) since it was rolled, age ago. setBack: the spec was set back
// since, so c-2's pod is the out-of-date one.
func rolledCrashLoop(age time.Duration, setBack bool) State {
	p := troubled(running(2, 0, 1, 2), ReasonCrashLoop,
		"container etcd restarted 4 times, last exit code 1: --election-timeout[20ms] should be at least as 5 times as --heartbeat-interval[100ms]", stuckAfter)
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
	p.Unschedulable = true
	return State{Size: 3, MembersKnown: true, Bootstrapped: true, Persistent: true, Now: passAt, Members: members,
		Pods:   pods(running(0), running(1, 0, 1), p),
		Claims: map[int]ClaimView{0: {Ordinal: 0, Bound: true, MemberID: 100}, 1: {Ordinal: 1, Bound: true, MemberID: 101}}}
}
