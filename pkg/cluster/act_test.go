package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// fakeActor records the actor calls a pass makes and answers each with result.
type fakeActor struct {
	calls  []string
	result Result
	err    error
}

var _ actor = (*fakeActor)(nil)

func (f *fakeActor) record(format string, args ...any) (Result, error) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return f.result, f.err
}

func (f *fakeActor) CreatePod(_ context.Context, _ *api.EtcdCluster, t member.Template, _ string) (Result, error) {
	if t.MemberID != 0 {
		return f.record("CreatePod %d %s %v %s restarting %x", t.Ordinal, t.ClusterState, t.InitialCluster, t.Version, t.MemberID)
	}
	return f.record("CreatePod %d %s %v %s", t.Ordinal, t.ClusterState, t.InitialCluster, t.Version)
}
func (f *fakeActor) DeleteClaim(_ context.Context, _ *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim, _ string) (Result, error) {
	return f.record("DeleteClaim %s", pvc.Name)
}
func (f *fakeActor) DeletePod(_ context.Context, _ *api.EtcdCluster, p *corev1.Pod, _ string) (Result, error) {
	return f.record("DeletePod %s", p.Name)
}
func (f *fakeActor) EvictPod(_ context.Context, _ *api.EtcdCluster, p *corev1.Pod, _ string) (Result, error) {
	return f.record("EvictPod %s", p.Name)
}
func (f *fakeActor) AddLearner(_ context.Context, _ *api.EtcdCluster, voters []string, o int, _ string) (Result, error) {
	return f.record("AddLearner %d via %v", o, voters)
}
func (f *fakeActor) MovePeerURL(_ context.Context, _ *api.EtcdCluster, voters []string, o int, id uint64, u, _ string) (Result, error) {
	return f.record("MovePeerURL %d %x %s via %v", o, id, u, voters)
}
func (f *fakeActor) Promote(_ context.Context, _ *api.EtcdCluster, voters []string, o int, id uint64) (Result, error) {
	return f.record("Promote %d %x via %v", o, id, voters)
}
func (f *fakeActor) RemoveMember(_ context.Context, _ *api.EtcdCluster, voters []string, o int, id uint64, _ string) (Result, error) {
	return f.record("RemoveMember %d %x via %v", o, id, voters)
}
func (f *fakeActor) MoveLeader(_ context.Context, _ *api.EtcdCluster, leader string, o int, to uint64) (Result, error) {
	return f.record("MoveLeader %d from %s to %x", o, leader, to)
}
func (f *fakeActor) Downgrade(_ context.Context, _ *api.EtcdCluster, voters []string, target string) (Result, error) {
	return f.record("Downgrade(%v, %q)", voters, target)
}
func (f *fakeActor) CreateClaim(_ context.Context, _ *api.EtcdCluster, o int) (bool, error) {
	res, err := f.record("CreateClaim %d", o)
	return res.Changed, err
}
func (f *fakeActor) SetPodImage(_ context.Context, _ *api.EtcdCluster, p *corev1.Pod, change podImage, _ string) (Result, error) {
	return f.record("SetPodImage %s %s", p.Name, change.Image)
}
func (f *fakeActor) PatchPodMetadata(_ context.Context, _ *api.EtcdCluster, p *corev1.Pod, _ member.MetadataPatch) (Result, error) {
	return f.record("PatchPodMetadata %s", p.Name)
}
func (f *fakeActor) AnnotatePod(_ context.Context, p *corev1.Pod, key, value string) error {
	_, err := f.record("AnnotatePod %s %s=%s", p.Name, key, value)
	return err
}
func (f *fakeActor) AdoptPod(_ context.Context, _ *api.EtcdCluster, p *corev1.Pod) (*corev1.Pod, error) {
	_, err := f.record("AdoptPod %s", p.Name)
	return p, err
}
func (f *fakeActor) AnnotateClaim(_ context.Context, pvc *corev1.PersistentVolumeClaim, id uint64) (*corev1.PersistentVolumeClaim, error) {
	_, err := f.record("AnnotateClaim %s %x", pvc.Name, id)
	return pvc, err
}
func (f *fakeActor) SetClaimAnnotation(_ context.Context, pvc *corev1.PersistentVolumeClaim, key, value string) (*corev1.PersistentVolumeClaim, error) {
	_, err := f.record("SetClaimAnnotation %s %s=%s", pvc.Name, key, value)
	return pvc, err
}
func (f *fakeActor) DisownClaim(_ context.Context, _ *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim) error {
	_, err := f.record("DisownClaim %s", pvc.Name)
	return err
}
func (f *fakeActor) SetClaimsFinalizer(_ context.Context, c *api.EtcdCluster, on bool) (bool, error) {
	res, err := f.record("SetClaimsFinalizer %s %v", c.Name, on)
	return res.Changed, err
}
func (f *fakeActor) ApplyService(_ context.Context, _ *api.EtcdCluster, want, have *corev1.Service) error {
	_, err := f.record("ApplyService %s create=%v", want.Name, have == nil)
	return err
}
func (f *fakeActor) CreateSecret(_ context.Context, _ *api.EtcdCluster, want *corev1.Secret) (bool, error) {
	res, err := f.record("CreateSecret %s", want.Name)
	_ = res
	return err == nil, err
}
func (f *fakeActor) UpdateSecret(_ context.Context, _ *api.EtcdCluster, want *corev1.Secret) error {
	_, err := f.record("UpdateSecret %s", want.Name)
	return err
}
func (f *fakeActor) DeleteService(_ context.Context, _ *api.EtcdCluster, svc *corev1.Service) error {
	_, err := f.record("DeleteService %s", svc.Name)
	return err
}
func (f *fakeActor) ApplyBudget(_ context.Context, _ *api.EtcdCluster, want, have *policyv1.PodDisruptionBudget) error {
	_, err := f.record("ApplyBudget %s create=%v", want.Name, have == nil)
	return err
}
func (f *fakeActor) ApplyNetworkPolicy(_ context.Context, _ *api.EtcdCluster, want *networkingv1.NetworkPolicy, create bool) error {
	_, err := f.record("ApplyNetworkPolicy %s create=%v", want.Name, create)
	return err
}
func (f *fakeActor) DeleteNetworkPolicy(_ context.Context, _ *api.EtcdCluster, have *networkingv1.NetworkPolicy) error {
	_, err := f.record("DeleteNetworkPolicy %s", have.Name)
	return err
}
func (f *fakeActor) AnnotateCluster(_ context.Context, c *api.EtcdCluster, key, value string) error {
	_, err := f.record("AnnotateCluster %s %s=%s", c.Name, key, value)
	return err
}
func (f *fakeActor) UnannotateCluster(_ context.Context, c *api.EtcdCluster, key string) error {
	_, err := f.record("UnannotateCluster %s %s", c.Name, key)
	return err
}
func (f *fakeActor) PatchClusterStorage(_ context.Context, c *api.EtcdCluster, _ *api.StorageSpec) error {
	_, err := f.record("PatchClusterStorage %s", c.Name)
	return err
}
func (f *fakeActor) CreateLease(_ context.Context, l *coordinationv1.Lease) (bool, error) {
	res, err := f.record("CreateLease %s", l.Name)
	return res.Changed, err
}
func (f *fakeActor) UpdateLease(_ context.Context, l *coordinationv1.Lease) (bool, error) {
	res, err := f.record("UpdateLease %s", l.Name)
	return res.Changed, err
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

// Each action reaches its own actor method, with what the pass observed: the pod,
// the voting members (leader first, never the member being removed), the leader's address.
func TestActDispatch(t *testing.T) {
	c := newCluster(3)
	c.Spec.Version, c.Status.CurrentVersion = "3.6.16", "3.6.16"
	for _, tc := range []struct {
		action plan.Action
		want   string
	}{
		{plan.Action{Kind: plan.ActionCreatePod, Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2},
			PodVersion: "3.6.16"}, "CreatePod 2 existing [0 1 2] 3.6.16"},
		{plan.Action{Kind: plan.ActionChooseSurvivor, Ordinal: 1, MemberID: 101},
			"AnnotateCluster demo " + api.AnnotationRecoverQuorum + "=demo-1"},
		{plan.Action{Kind: plan.ActionDeletePod, Ordinal: 1}, "DeletePod demo-1"},
		// A serving member's pod goes through the Eviction API; any other roll, and the
		// forced survivor's restart, is a plain delete.
		{plan.Action{Kind: plan.ActionRollMember, Ordinal: 1, MemberID: 101, Evict: true}, "EvictPod demo-1"},
		{plan.Action{Kind: plan.ActionRollMember, Ordinal: 1, MemberID: 101}, "DeletePod demo-1"},
		{plan.Action{Kind: plan.ActionForceNewCluster, Ordinal: 1, MemberID: 101}, "DeletePod demo-1"},
		{plan.Action{Kind: plan.ActionAddLearner, Ordinal: 2}, "AddLearner 2 via [http://10.0.0.1:2379 http://10.0.0.2:2379]"},
		{plan.Action{Kind: plan.ActionPromote, Ordinal: 2, MemberID: 102}, "Promote 2 66 via [http://10.0.0.1:2379 http://10.0.0.2:2379]"},
		{plan.Action{Kind: plan.ActionRemoveMember, Ordinal: 0, MemberID: 100}, "RemoveMember 0 64 via [http://10.0.0.2:2379]"},
		{plan.Action{Kind: plan.ActionMoveLeader, Ordinal: 0, MemberID: 100, Transferee: 101}, "MoveLeader 0 from http://10.0.0.1:2379 to 65"},
		{plan.Action{Kind: plan.ActionEnableDowngrade, Version: "3.5.35"}, `Downgrade([http://10.0.0.1:2379 http://10.0.0.2:2379], "3.5.35")`},
		{plan.Action{Kind: plan.ActionCancelDowngrade}, `Downgrade([http://10.0.0.1:2379 http://10.0.0.2:2379], "")`},
	} {
		f := &fakeActor{}
		r := &Reconciler{deps: Deps{Log: quietLog()}, control: f}
		requeue, err := r.act(context.Background(), c, observed(c), plan.Decision{Action: &tc.action, Message: "why"})
		if err != nil || len(f.calls) != 1 || f.calls[0] != tc.want {
			t.Errorf("%s: calls %q, err %v; want %q", tc.action.Kind, f.calls, err, tc.want)
		}
		if requeue != afterAction {
			t.Errorf("%s: look again in %v, want %v after a change", tc.action.Kind, requeue, afterAction)
		}
	}
}

// What act asks of the next pass: the actor's retry when the change could not be made
// yet, nothing to do for a pod already gone or a leader whose pod has no IP yet.
func TestActRequeue(t *testing.T) {
	c := newCluster(3)
	f := &fakeActor{result: Result{RetryIn: time.Second, Refused: etcdutil.ErrUnhealthy}}
	r := &Reconciler{deps: Deps{Log: quietLog()}, control: f}
	if requeue, err := r.act(context.Background(), c, observed(c), plan.Decision{Action: &plan.Action{Kind: plan.ActionAddLearner, Ordinal: 2}}); err != nil || requeue != time.Second {
		t.Errorf("refused add: requeue %v, err %v; want the control's 1s", requeue, err)
	}
	f = &fakeActor{err: errors.New("boom")}
	r.control = f
	if _, err := r.act(context.Background(), c, observed(c), plan.Decision{Action: &plan.Action{Kind: plan.ActionPromote, Ordinal: 2}}); err == nil {
		t.Error("a failed change must fail the pass")
	}
	o := observed(c)
	delete(o.pods, 1)
	o.pods[0].Status.PodIP = ""
	f = &fakeActor{}
	r.control = f
	if _, err := r.act(context.Background(), c, o, plan.Decision{Action: &plan.Action{Kind: plan.ActionDeletePod, Ordinal: 1}}); err != nil {
		t.Errorf("delete of a pod already gone: %v", err)
	}
	if requeue, _ := r.act(context.Background(), c, o, plan.Decision{Action: &plan.Action{Kind: plan.ActionMoveLeader, Ordinal: 0, Transferee: 101}}); requeue != whileWaiting {
		t.Errorf("move leader without the leader's IP: requeue %v, want %v", requeue, whileWaiting)
	}
	if len(f.calls) != 0 {
		t.Errorf("calls %q, want none", f.calls)
	}
}

// A learner just added has its claim marked with its member ID in the same pass, before its
// etcd can leave data there that no mark names; a claim marked already, or an add that
// changed nothing (no ID), is left as it is.
func TestActMarksTheClaimOfAnAddedLearner(t *testing.T) {
	c := newCluster(3)
	c.Spec.Storage = member.DefaultStorage()
	for _, tc := range []struct {
		name   string
		result Result
		marked bool
		want   []string
	}{
		{"added, claim not marked", Result{Changed: true, MemberID: 0x77}, false,
			[]string{"AddLearner 2 via [http://10.0.0.1:2379 http://10.0.0.2:2379]", "AnnotateClaim data-demo-2 77"}},
		{"added, claim marked already", Result{Changed: true, MemberID: 0x77}, true,
			[]string{"AddLearner 2 via [http://10.0.0.1:2379 http://10.0.0.2:2379]"}},
		{"already a member: no ID", Result{}, false,
			[]string{"AddLearner 2 via [http://10.0.0.1:2379 http://10.0.0.2:2379]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observed(c)
			o.claims = map[int]*corev1.PersistentVolumeClaim{2: member.Claim(c, 2)}
			if tc.marked {
				o.claims[2].Annotations = map[string]string{member.AnnotationMemberID: "66"}
			}
			f := &fakeActor{result: tc.result}
			r := &Reconciler{deps: Deps{Log: quietLog()}, control: f}
			if _, err := r.act(context.Background(), c, o, plan.Decision{Action: &plan.Action{Kind: plan.ActionAddLearner, Ordinal: 2}}); err != nil {
				t.Fatalf("act: %v", err)
			}
			if fmt.Sprint(f.calls) != fmt.Sprint(tc.want) {
				t.Errorf("calls %q, want %q", f.calls, tc.want)
			}
		})
	}
}
