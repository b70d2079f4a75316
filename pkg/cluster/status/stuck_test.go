package status

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

func TestStatusStuckPods(t *testing.T) {
	c := newCluster(3)
	c.Name = "c"
	healthy2 := []plan.MemberView{plantest.Leader(0), plantest.Voter(1)}
	for _, tc := range []struct {
		name     string
		pod      plan.PodView
		degraded api.ConditionReason
		message  []string
	}{
		{"image pull failing, within the bound", plantest.PullFails(plantest.Joining(2, true, 0, 1, 2), plan.DefaultStuckAfter-time.Second),
			api.ReasonAsExpected, nil},
		{"image pull failing, past the bound", plantest.PullFails(plantest.Joining(2, true, 0, 1, 2), plan.DefaultStuckAfter),
			api.ReasonPodCannotStart, []string{"pod c-2 cannot start since", "ImagePullBackOff", `Back-off pulling image "nope/etcd:v3.6.16"`}},
		{"unschedulable past the bound", plantest.Troubled(plantest.Joining(2, false, 0, 1, 2), "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", time.Minute),
			api.ReasonPodCannotStart, []string{"Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."}},
		{"terminating within its grace period and the bound", plantest.GoneSince(plantest.Joining(2, true, 0, 1, 2), "w", plan.DefaultStuckAfter-time.Second),
			api.ReasonAsExpected, nil},
		{"terminating long past its grace period", plantest.GoneSince(plantest.Joining(2, true, 0, 1, 2), "worker-2", time.Hour),
			api.ReasonPodStuckTerminating, []string{"pod c-2 has been terminating since", "on node worker-2",
				"kubectl delete pod -n ns c-2 --force --grace-period=0", "kubectl delete node worker-2", "does not force-delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := plan.State{Name: "c", Namespace: "ns", Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy2,
				Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), tc.pod), Now: plantest.PassAt}
			deg := meta.FindStatusCondition(Compute(c, s, plan.Plan(s)).Conditions, string(api.ConditionDegraded))
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
	conflict := plantest.Troubled(plantest.Joining(2, false, 0, 1, 2), "Unschedulable",
		"0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 node(s) didn't match pod anti-affinity rules.", time.Minute)
	cpu := plantest.Troubled(plantest.Joining(2, false, 0, 1, 2), "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", time.Minute)
	healthy := []plan.MemberView{plantest.Leader(0), plantest.Voter(1)}
	for _, tc := range []struct {
		name       string
		persistent bool
		members    []plan.MemberView
		pod        plan.PodView
		hint       bool
	}{
		{"claims, volume node conflict", true, healthy, conflict, true},
		{"claims, another reason", true, healthy, cpu, false},
		{"emptyDir", false, healthy, conflict, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := plan.State{Name: "c", Namespace: "ns", Size: 3, Bootstrapped: true, MembersKnown: true, Persistent: tc.persistent,
				Members: tc.members, Pods: plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), tc.pod), Now: plantest.PassAt}
			deg := meta.FindStatusCondition(Compute(c, s, plan.Plan(s)).Conditions, string(api.ConditionDegraded))
			if deg == nil || deg.Reason != string(api.ReasonPodCannotStart) {
				t.Fatalf("Degraded = %+v, want PodCannotStart", deg)
			}
			if got := strings.Contains(deg.Message, "kubectl delete pvc -n ns data-c-2"); got != tc.hint {
				t.Errorf("Degraded message %q: names the claim to delete = %v, want %v", deg.Message, got, tc.hint)
			}
		})
	}
}
