package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// budgetRefusal is the API server's answer to an eviction the budget does not allow.
var budgetRefusal = apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)

// evictionFixture is a fixture whose member pod demo-1 (UID pod-uid, changed by edits) the
// Eviction API answers with answer; evictions holds what was asked of it.
func evictionFixture(t *testing.T, answer error, edits ...func(*corev1.Pod)) (*fixture, *corev1.Pod, *[]*policyv1.Eviction) {
	c := newCluster(3)
	p := member.Pod(c, member.Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0, 1, 2}}, testInitImage)
	p.UID = "pod-uid"
	for _, edit := range edits {
		edit(p)
	}
	f := newFixture(t, c, p)
	var evictions []*policyv1.Eviction
	f.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		evictions = append(evictions, a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction))
		return true, nil, answer
	})
	return f, p, &evictions
}

// The rollout's eviction of a serving member's pod: that very pod (a UID precondition), never
// a plain delete; a pod gone or replaced is done; a refusal (the budget allows none, or two
// budgets cover the pod) deletes nothing and says why.
func TestEvictPod(t *testing.T) {
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "demo-1")
	replaced := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "demo-1", errors.New("precondition failed: UID"))
	twoBudgets := apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
	for _, tc := range []struct {
		name    string
		answer  error
		changed bool
		refused string
	}{
		{name: "evicted", changed: true},
		{name: "the budget allows none", answer: budgetRefusal, refused: "violate the pod's disruption budget"},
		{name: "two budgets cover the pod", answer: twoBudgets, refused: "more than one PodDisruptionBudget"},
		{name: "gone already", answer: gone},
		{name: "replaced by a newer pod", answer: replaced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, p, evictions := evictionFixture(t, tc.answer)
			res, err := f.r.control.EvictPod(context.Background(), newCluster(3), p, "rolling")
			var refused *evictionRefused
			switch {
			case tc.refused != "" && (!errors.As(err, &refused) || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("EvictPod = %v, want a refusal saying %q", err, tc.refused)
			case tc.refused == "" && err != nil:
				t.Errorf("EvictPod = %v", err)
			}
			if res.Changed != tc.changed {
				t.Errorf("changed = %v, want %v", res.Changed, tc.changed)
			}
			if len(*evictions) != 1 {
				t.Fatalf("%d evictions, want 1", len(*evictions))
			}
			ev := (*evictions)[0]
			if ev.Name != "demo-1" || ev.DeleteOptions == nil || ev.DeleteOptions.Preconditions == nil ||
				ev.DeleteOptions.Preconditions.UID == nil || *ev.DeleteOptions.Preconditions.UID != p.UID {
				t.Errorf("eviction %+v, want demo-1 with the UID precondition %s", ev, p.UID)
			}
			if n := len(f.actions("delete", "pods")); n != 0 {
				t.Errorf("%d plain deletes of pods, want none", n)
			}
		})
	}
}

// A rollout step whose eviction the budget refuses is a wait, not a failure: Progressing keeps
// the rollout's reason and quotes the API server, the pass looks again without a hot loop,
// and an Event says so.
func TestRefusedEvictionWaits(t *testing.T) {
	f, p, _ := evictionFixture(t, budgetRefusal)
	c := newCluster(3)
	o := observed(c)
	o.pods[1] = p
	d := plan.Decision{Action: &plan.Action{Kind: plan.ActionRollMember, Ordinal: 1, MemberID: 101, Evict: true},
		Progress: api.ReasonRollingPods, Message: "restarting member demo-1"}
	got, requeue, err := f.r.takeDecision(context.Background(), c, o, plan.State{}, d)
	if err != nil {
		t.Fatalf("takeDecision: %v", err)
	}
	if got.Action != nil || got.Progress != api.ReasonRollingPods || got.Blocked != "" ||
		!strings.Contains(got.Message, "waiting for the disruption budget") || !strings.Contains(got.Message, "violate the pod's disruption budget") {
		t.Errorf("decision %+v, want the rollout waiting for the budget", got)
	}
	if requeue != whileBlocked {
		t.Errorf("look again in %v, want %v", requeue, whileBlocked)
	}
	select {
	case e := <-f.recorder.Events:
		if !strings.Contains(e, string(EventEvictionRefused)) || !strings.Contains(e, "demo-1") {
			t.Errorf("event %q, want %s naming demo-1", e, EventEvictionRefused)
		}
	default:
		t.Error("no Event says the eviction was refused")
	}
}

// The planner's view of the cluster's budget: its own only, counted or not, the pods evicted
// and not gone, and how long it has held back a cluster whose members are all back.
func TestBudgetView(t *testing.T) {
	c := newCluster(3)
	o := observed(c)
	if o.budgetView() != nil {
		t.Fatal("a cluster without a budget has a view of one")
	}
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	b := member.DisruptionBudget(c)
	b.Generation = 2
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2,
		DisruptedPods: map[string]metav1.Time{"demo-2": {Time: now}, "demo-0": {Time: now}},
		Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}
	o.budget = b
	o.pods[1].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
	v := o.budgetView()
	if v == nil || !v.Counted || v.Allowed != 0 || v.Healthy != 2 || v.Desired != 2 || strings.Join(v.Evicted, ",") != "demo-0,demo-2" {
		t.Fatalf("view %+v", v)
	}
	if !v.Since.Equal(now.Add(-time.Minute)) {
		t.Errorf("since %v, want the last member pod Ready, %v", v.Since, now.Add(-time.Minute))
	}
	b.Generation = 3
	if v := o.budgetView(); v.Counted {
		t.Error("a budget whose current spec is not counted yet is counted")
	}

	f := newFixture(t, c)
	foreign := member.DisruptionBudget(c)
	foreign.OwnerReferences = nil
	_ = f.kinf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(foreign)
	if got, err := f.r.observeBudget(c); err != nil || got != nil {
		t.Errorf("someone else's budget of the cluster's name read as the cluster's: %v, %v", got, err)
	}
}

// The budget lets a drain evict a member pod that is not Ready only while the budget is met
// without it: an AlwaysAllow someone set is put back to IfHealthyBudget, and a budget without
// the field (made before the operator set it: the same default) is current as it is.
func TestSyncKeepsUnhealthyPodEvictionPolicy(t *testing.T) {
	c := newCluster(3)
	always := member.DisruptionBudget(c)
	always.Spec.UnhealthyPodEvictionPolicy = ptrTo(policyv1.AlwaysAllow)
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c), always)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	got, err := f.kube.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), always.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.IfHealthyBudget {
		t.Errorf("unhealthyPodEvictionPolicy after the pass: %s, want IfHealthyBudget", ptrString(p))
	}

	unset := member.DisruptionBudget(c)
	unset.Spec.UnhealthyPodEvictionPolicy = nil
	f = newFixture(t, c, member.PeerService(c), member.ClientService(c), unset)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.applied("poddisruptionbudgets")); n != 0 {
		t.Errorf("%d applies of a budget without the field, want none", n)
	}
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return "unset"
	}
	return string(*p)
}
