package cluster

import (
	"context"
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
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// podProblem reads the kubelet's and the scheduler's words from the pod, with the time the
// trouble began from the pod's own timestamps.
func TestPodProblem(t *testing.T) {
	created := metav1.NewTime(plantest.PassAt.Add(-time.Hour))
	notReady := metav1.NewTime(plantest.PassAt.Add(-time.Minute))
	exited := metav1.NewTime(plantest.PassAt.Add(-5 * time.Second))
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-1", CreationTimestamp: created,
			Annotations: map[string]string{member.AnnotationReadyRestarts: "0"}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: notReady}}}}
	}
	etcd := func(st corev1.ContainerStatus) *corev1.Pod {
		p := base()
		st.Name = member.EtcdContainerName
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		return p
	}
	// recorded is a pod whose etcd container was last seen ready after restarts restarts
	// ("": a pod made by an earlier operator, with no record).
	recorded := func(restarts string, st corev1.ContainerStatus) *corev1.Pod {
		p := etcd(st)
		p.Annotations = map[string]string{}
		if restarts != "" {
			p.Annotations[member.AnnotationReadyRestarts] = restarts
		}
		return p
	}
	failed := &corev1.ContainerStateTerminated{ExitCode: 2, Message: "panic: member removed", FinishedAt: exited}
	// rebooted is the last run of a container whose node rebooted under it.
	rebooted := &corev1.ContainerStateTerminated{ExitCode: 255, Reason: "Unknown", FinishedAt: notReady}
	runningAgain := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: exited}}
	backOff := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		reason string
		says   string
		since  time.Time
		exited time.Time
	}{
		{"running and ready", etcd(corev1.ContainerStatus{Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), "", "", time.Time{}, time.Time{}},
		{"image pull back-off", etcd(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope"`}}}), "ImagePullBackOff", `Back-off pulling image "nope"`, notReady.Time, time.Time{}},
		{"config error", etcd(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CreateContainerConfigError", Message: `secret "s" not found`}}}), "CreateContainerConfigError", `secret "s" not found`, notReady.Time, time.Time{}},
		{"still creating", etcd(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ContainerCreating"}}}), "", "", time.Time{}, time.Time{}},
		{"crashed twice: not yet a loop", etcd(corev1.ContainerStatus{RestartCount: 2, LastTerminationState: corev1.ContainerState{Terminated: failed},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}}), "", "", time.Time{}, time.Time{}},
		{"crash loop, waiting", etcd(corev1.ContainerStatus{RestartCount: 5, LastTerminationState: corev1.ContainerState{Terminated: failed},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}}), plan.ReasonCrashLoop,
			"restarted 5 times since it was last ready, last exit code 2: panic: member removed", notReady.Time, exited.Time},
		{"a node rebooted: three restarts in the pod's life, the last one the reboot's, etcd runs again: no crash loop", recorded("2",
			corev1.ContainerStatus{RestartCount: 3, LastTerminationState: corev1.ContainerState{Terminated: rebooted}, State: runningAgain}),
			"", "", time.Time{}, time.Time{}},
		{"... etcd failed once since the reboot, in back-off: no crash loop", recorded("3",
			corev1.ContainerStatus{RestartCount: 4, LastTerminationState: corev1.ContainerState{Terminated: failed}, State: backOff}),
			"", "", time.Time{}, time.Time{}},
		{"... the kubelet starts the pod again (its sandbox is new): no crash loop", etcd(corev1.ContainerStatus{RestartCount: 4,
			LastTerminationState: corev1.ContainerState{Terminated: rebooted},
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}),
			"", "", time.Time{}, time.Time{}},
		{"... a pod of an earlier operator (no record), four restarts in its life: counted from now, no crash loop", recorded("",
			corev1.ContainerStatus{RestartCount: 4, LastTerminationState: corev1.ContainerState{Terminated: rebooted}, State: runningAgain}),
			"", "", time.Time{}, time.Time{}},
		{"failed three times since it was last ready: a crash loop, counted since then", recorded("2",
			corev1.ContainerStatus{RestartCount: 5, LastTerminationState: corev1.ContainerState{Terminated: failed}, State: backOff}),
			plan.ReasonCrashLoop, "restarted 3 times since it was last ready, last exit code 2", notReady.Time, exited.Time},
		{"crash loop: the end of a long log is kept, where etcd says why it exited", etcd(corev1.ContainerStatus{RestartCount: 3,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
				Message: strings.Repeat(`{"level":"info","msg":"member-init: the member has started before"}`+"\n", 20) +
					`{"level":"warn","msg":"failed to verify flags","error":"--election-timeout[200ms] should be at least as 5 times as --heartbeat-interval[100ms]"}`}},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}}), plan.ReasonCrashLoop,
			`"error":"--election-timeout[200ms] should be at least as 5 times as --heartbeat-interval[100ms]"}`, notReady.Time, time.Time{}},
		{"crash loop, briefly running: etcd starts again, it has not exited", etcd(corev1.ContainerStatus{RestartCount: 5,
			LastTerminationState: corev1.ContainerState{Terminated: failed}, State: runningAgain}),
			plan.ReasonCrashLoop, "member removed", notReady.Time, time.Time{}},
		{"an init container in a crash loop: its refusal is quoted", func() *corev1.Pod {
			p := base()
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: member.FetchContainerName, RestartCount: 3,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
					Message: "restore-failed: restore from snapshot failed: snapshot nowhere/missing.db: bucket etcd-backups: " +
						"opening nowhere/missing.db: object not found: NoSuchKey: The specified key does not exist."}},
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop,
					Message: "back-off 40s restarting failed container=fetch-snapshot pod=broken-s3-0_e2e-testrestorefrommissings3object-abcdef(0123456789abcdef)"}}}}
			return p
		}(), plan.ReasonCrashLoop, "container fetch-snapshot exited with code 1: restore-failed: restore from snapshot failed: snapshot nowhere/missing.db: " +
			"bucket etcd-backups: opening nowhere/missing.db: object not found: NoSuchKey",
			notReady.Time, time.Time{}},
		{"an init container that failed, kept terminated through its back-off: its refusal is quoted", func() *corev1.Pod {
			p := base()
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: member.InstallContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}},
				{Name: member.FetchContainerName, RestartCount: 2,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
						Message: "restore-failed: restore from snapshot failed: snapshot nowhere/missing.db: NoSuchKey"}}}}
			return p
		}(), plan.ReasonCrashLoop, "container fetch-snapshot exited with code 1: restore-failed: restore from snapshot failed", notReady.Time, time.Time{}},
		{"init containers that completed are no problem", func() *corev1.Pod {
			p := base()
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: member.FetchContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
			return p
		}(), "", "", time.Time{}, time.Time{}},
		{"unschedulable", func() *corev1.Pod {
			p := base()
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available", LastTransitionTime: notReady})
			return p
		}(), "Unschedulable", "0/1 nodes are available", notReady.Time, time.Time{}},
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
			if !got.Exited.Equal(tc.exited) {
				t.Errorf("exited %s, want %s", got.Exited, tc.exited)
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
// the two others keep quorum; the removal names why. A member whose node rebooted (the pod's
// lifetime restarts, the reboot's exit code 255, not ready since the node went away) is not.
func TestSyncReplacesCrashLoopingMember(t *testing.T) {
	now := time.Now()
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(now.Add(-10 * plan.DefaultStuckAfter))}}
	crashed := &corev1.ContainerStateTerminated{ExitCode: 2, Message: "panic: invalid database",
		FinishedAt: metav1.NewTime(now.Add(-2 * plan.DefaultStuckAfter))}
	rebooted := &corev1.ContainerStateTerminated{ExitCode: 255, Reason: "Unknown",
		FinishedAt: metav1.NewTime(now.Add(-10 * plan.DefaultStuckAfter))}
	backOff := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}
	for _, tc := range []struct {
		name     string
		recorded string // the restart count when last seen ready
		etcd     corev1.ContainerStatus
		bounds   plan.Bounds // the operator's (Deps.Bounds); zero is production
		removed  bool
	}{
		{"crash-looping since it was made, down for the bound", "0", corev1.ContainerStatus{RestartCount: 4,
			State: backOff, LastTerminationState: corev1.ContainerState{Terminated: crashed}}, plan.Bounds{}, true},
		{"failed three times since it was last ready", "2", corev1.ContainerStatus{RestartCount: 5,
			State: backOff, LastTerminationState: corev1.ContainerState{Terminated: crashed}}, plan.Bounds{}, true},
		{"its node rebooted: etcd runs again after three restarts in the pod's life", "2", corev1.ContainerStatus{RestartCount: 3,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Second))}},
			LastTerminationState: corev1.ContainerState{Terminated: rebooted}}, plan.Bounds{}, false},
		{"its node rebooted: etcd failed once since, in back-off", "3", corev1.ContainerStatus{RestartCount: 4,
			State: backOff, LastTerminationState: corev1.ContainerState{Terminated: crashed}}, plan.Bounds{}, false},
		{"crash-looping, but etcd has just exited: not down for the bound", "0", corev1.ContainerStatus{RestartCount: 4,
			State: backOff, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2,
				FinishedAt: metav1.NewTime(now.Add(-time.Second))}}}, plan.Bounds{}, false},
		{"crash-looping, down for half the production bound: not yet", "0", corev1.ContainerStatus{RestartCount: 4,
			State: backOff, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2,
				Message: "panic: invalid database", FinishedAt: metav1.NewTime(now.Add(-plan.DefaultStuckAfter / 2))}}}, plan.Bounds{}, false},
		{"the same, past the shorter bound the operator was started with", "0", corev1.ContainerStatus{RestartCount: 4,
			State: backOff, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2,
				Message: "panic: invalid database", FinishedAt: metav1.NewTime(now.Add(-plan.DefaultStuckAfter / 2))}}},
			plan.Bounds{StuckAfter: plan.DefaultStuckAfter / 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.etcd.Name = member.EtcdContainerName
			f, etcd := crashLoopFixture(t, func(p *corev1.Pod) {
				p.Annotations[member.AnnotationReadyRestarts] = tc.recorded
				p.Status.Conditions = notReady
				p.Status.ContainerStatuses = []corev1.ContainerStatus{tc.etcd}
			})
			f.with(func(d *Deps) { d.Bounds = tc.bounds })
			if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if !tc.removed {
				if len(etcd.removed) != 0 {
					t.Fatalf("removed %v, want no member removed", etcd.removed)
				}
				return
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
		})
	}
}

// A member Service the API server refuses (a quota on Services) stops neither the pass nor
// the other members: the seed's pod is made, Degraded says which Service is refused and
// why, and waiting passes do not ask again before whileRefused.
func TestSyncMemberServiceRefused(t *testing.T) {
	c := newCluster(3)
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	f.kube.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() != "demo-2" {
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
	for _, name := range f.applied("services") {
		if svc, err := f.kube.CoreV1().Services("ns").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
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
