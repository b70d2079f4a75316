package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// fakeControl records the member-control calls a pass makes and answers each with result.
type fakeControl struct {
	calls  []string
	result Result
	err    error
}

var _ memberControl = (*fakeControl)(nil)

func (f *fakeControl) record(format string, args ...any) (Result, error) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return f.result, f.err
}

func (f *fakeControl) CreatePod(_ context.Context, _ *api.EtcdCluster, t member.Template, _ string) (Result, error) {
	if t.MemberID != 0 {
		return f.record("CreatePod %d %s %v %s restarting %x", t.Ordinal, t.ClusterState, t.InitialCluster, t.Version, t.MemberID)
	}
	return f.record("CreatePod %d %s %v %s", t.Ordinal, t.ClusterState, t.InitialCluster, t.Version)
}
func (f *fakeControl) DeleteClaim(_ context.Context, _ *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim, _ string) (Result, error) {
	return f.record("DeleteClaim %s", pvc.Name)
}
func (f *fakeControl) DeletePod(_ context.Context, _ *api.EtcdCluster, p *corev1.Pod, _ string) (Result, error) {
	return f.record("DeletePod %s", p.Name)
}
func (f *fakeControl) AddLearner(_ context.Context, _ *api.EtcdCluster, voters []string, o int) (Result, error) {
	return f.record("AddLearner %d via %v", o, voters)
}
func (f *fakeControl) Promote(_ context.Context, _ *api.EtcdCluster, voters []string, o int, id uint64) (Result, error) {
	return f.record("Promote %d %x via %v", o, id, voters)
}
func (f *fakeControl) RemoveMember(_ context.Context, _ *api.EtcdCluster, voters []string, o int, id uint64, _ string) (Result, error) {
	return f.record("RemoveMember %d %x via %v", o, id, voters)
}
func (f *fakeControl) MoveLeader(_ context.Context, _ *api.EtcdCluster, leader string, o int, to uint64) (Result, error) {
	return f.record("MoveLeader %d from %s to %x", o, leader, to)
}
func (f *fakeControl) Downgrade(_ context.Context, _ *api.EtcdCluster, voters []string, target string) (Result, error) {
	return f.record("Downgrade(%v, %q)", voters, target)
}

// observed is a pass that saw the voting members 0 (leading) and 1 and the learner 2, each at
// pod IP 10.0.0.<ordinal+1>.
func observed(c *api.EtcdCluster) *observation {
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, statuses: map[int]etcdutil.Status{}, leader: 100}
	for ord := range 3 {
		p := member.Pod(c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "x")
		p.Status.PodIP = fmt.Sprintf("10.0.0.%d", ord+1)
		o.pods[ord] = p
		o.statuses[ord] = etcdutil.Status{ID: uint64(100 + ord), Leader: 100, IsLearner: ord == 2}
	}
	return o
}

// Each action reaches its own member-control method, with what the pass observed: the pod,
// the voting members (leader first, never the member being removed), the leader's address.
func TestActDispatch(t *testing.T) {
	c := newCluster(3)
	c.Spec.Version, c.Status.CurrentVersion = "3.6.16", "3.6.16"
	for _, tc := range []struct {
		action plan.Action
		want   string
	}{
		{plan.Action{Kind: plan.ActionCreatePod, Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}},
			"CreatePod 2 existing [0 1 2] 3.6.16"},
		{plan.Action{Kind: plan.ActionDeletePod, Ordinal: 1}, "DeletePod demo-1"},
		{plan.Action{Kind: plan.ActionAddLearner, Ordinal: 2}, "AddLearner 2 via [http://10.0.0.1:2379 http://10.0.0.2:2379]"},
		{plan.Action{Kind: plan.ActionPromote, Ordinal: 2, MemberID: 102}, "Promote 2 66 via [http://10.0.0.1:2379 http://10.0.0.2:2379]"},
		{plan.Action{Kind: plan.ActionRemoveMember, Ordinal: 0, MemberID: 100}, "RemoveMember 0 64 via [http://10.0.0.2:2379]"},
		{plan.Action{Kind: plan.ActionMoveLeader, Ordinal: 0, MemberID: 100, Transferee: 101}, "MoveLeader 0 from http://10.0.0.1:2379 to 65"},
		{plan.Action{Kind: plan.ActionEnableDowngrade, Version: "3.5.35"}, `Downgrade([http://10.0.0.1:2379 http://10.0.0.2:2379], "3.5.35")`},
		{plan.Action{Kind: plan.ActionCancelDowngrade}, `Downgrade([http://10.0.0.1:2379 http://10.0.0.2:2379], "")`},
	} {
		f := &fakeControl{}
		r := &Reconciler{deps: Deps{Log: quietLog()}, control: f}
		requeue, err := r.act(context.Background(), c, observed(c), tc.action, "why")
		if err != nil || len(f.calls) != 1 || f.calls[0] != tc.want {
			t.Errorf("%s: calls %q, err %v; want %q", tc.action.Kind, f.calls, err, tc.want)
		}
		if requeue != afterAction {
			t.Errorf("%s: look again in %v, want %v after a change", tc.action.Kind, requeue, afterAction)
		}
	}
}

// What act asks of the next pass: the control's retry when the change could not be made
// yet, nothing to do for a pod already gone or a leader whose pod has no IP yet.
func TestActRequeue(t *testing.T) {
	c := newCluster(3)
	f := &fakeControl{result: Result{RetryIn: time.Second, Refused: etcdutil.ErrUnhealthy}}
	r := &Reconciler{deps: Deps{Log: quietLog()}, control: f}
	if requeue, err := r.act(context.Background(), c, observed(c), plan.Action{Kind: plan.ActionAddLearner, Ordinal: 2}, ""); err != nil || requeue != time.Second {
		t.Errorf("refused add: requeue %v, err %v; want the control's 1s", requeue, err)
	}
	f = &fakeControl{err: errors.New("boom")}
	r.control = f
	if _, err := r.act(context.Background(), c, observed(c), plan.Action{Kind: plan.ActionPromote, Ordinal: 2}, ""); err == nil {
		t.Error("a failed change must fail the pass")
	}
	o := observed(c)
	delete(o.pods, 1)
	o.pods[0].Status.PodIP = ""
	f = &fakeControl{}
	r.control = f
	if _, err := r.act(context.Background(), c, o, plan.Action{Kind: plan.ActionDeletePod, Ordinal: 1}, ""); err != nil {
		t.Errorf("delete of a pod already gone: %v", err)
	}
	if requeue, _ := r.act(context.Background(), c, o, plan.Action{Kind: plan.ActionMoveLeader, Ordinal: 0, Transferee: 101}, ""); requeue != whileWaiting {
		t.Errorf("move leader without the leader's IP: requeue %v, want %v", requeue, whileWaiting)
	}
	if len(f.calls) != 0 {
		t.Errorf("calls %q, want none", f.calls)
	}
}
