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
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}}), "", "", time.Time{}},
		{"crash loop, waiting", etcd(corev1.ContainerStatus{RestartCount: 5, LastTerminationState: corev1.ContainerState{Terminated: failed},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}}), plan.ReasonCrashLoop, "restarted 5 times, last exit code 2: panic: member removed", notReady.Time},
		{"crash loop: the end of a long log is kept, where etcd says why it exited", etcd(corev1.ContainerStatus{RestartCount: 3,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
				Message: strings.Repeat(`{"level":"info","msg":"member-init: the member has started before"}`+"\n", 20) +
					`{"level":"warn","msg":"failed to verify flags","error":"--election-timeout[200ms] should be at least as 5 times as --heartbeat-interval[100ms]"}`}},
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}}}), plan.ReasonCrashLoop,
			`"error":"--election-timeout[200ms] should be at least as 5 times as --heartbeat-interval[100ms]"}`, notReady.Time},
		{"crash loop, briefly running", etcd(corev1.ContainerStatus{RestartCount: 5, LastTerminationState: corev1.ContainerState{Terminated: failed},
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), plan.ReasonCrashLoop, "member removed", notReady.Time},
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
// the two others keep quorum; the removal names why. The bound is the one the operator was
// started with (Deps.Bounds), the production one by default.
func TestSyncReplacesCrashLoopingMember(t *testing.T) {
	for _, tc := range []struct {
		name        string
		notReadyFor time.Duration
		bounds      plan.Bounds
		removed     bool
	}{
		{"past the production bound", 2 * plan.DefaultStuckAfter, plan.Bounds{}, true},
		{"within the production bound", plan.DefaultStuckAfter / 2, plan.Bounds{}, false},
		{"the same, past the shorter bound the operator was started with", plan.DefaultStuckAfter / 2,
			plan.Bounds{StuckAfter: plan.DefaultStuckAfter / 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, etcd := crashLoopFixture(t, tc.notReadyFor)
			f.with(func(d *Deps) { d.Etcd, d.Bounds = etcd, tc.bounds })
			if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if !tc.removed {
				if len(etcd.removed) != 0 {
					t.Fatalf("removed %v within the bound, want none", etcd.removed)
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

// crashLoopFixture is a cluster of three whose member demo-2 crash-loops, not ready for
// notReadyFor, and etcd that records removals.
func crashLoopFixture(t *testing.T, notReadyFor time.Duration) (*fixture, *removingEtcd) {
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
				LastTransitionTime: metav1.NewTime(time.Now().Add(-notReadyFor))}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: member.EtcdContainerName, RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: plan.ReasonCrashLoop}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: "panic: invalid database"}}}}
		}
		objs = append(objs, p)
	}
	objs = append(objs, c, slice, member.PeerService(c), member.ClientService(c))
	return newFixture(t, objs...), etcd
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
