package status

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// A rollout whose evictions the API server refuses although the cluster's budget allows one
// (a second budget over the member pods): Progressing only while the refusals are recent,
// Degraded EvictionRefused, quoting the API server and naming the budget to keep, past the
// rollout's bound.
func TestStatusEvictionRefused(t *testing.T) {
	c := newCluster(3)
	c.Name, c.Spec.Version = "c", "3.6.16"
	twoBudgets := "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
	for _, tc := range []struct {
		name     string
		refused  time.Duration
		degraded api.ConditionReason
		phase    api.ClusterPhase
		message  []string
	}{
		{"never refused", 0, api.ReasonAsExpected, api.PhaseRollingOut, nil},
		{"refused within the bound", plan.DefaultComebackBound - time.Second, api.ReasonAsExpected, api.PhaseRollingOut, nil},
		{"refused past the bound", plan.DefaultComebackBound + time.Second, api.ReasonEvictionRefused, api.PhaseDegraded,
			[]string{"refused to evict pod c-2 for more than 2m0s", twoBudgets, "kubectl get pdb -n ns", "the one the operator keeps is c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := plantest.Pods(plantest.Rolled(0, "3.5.35", true, time.Hour), plantest.Rolled(1, "3.5.35", true, time.Hour),
				plantest.Rolled(2, "3.5.35", true, time.Hour))
			if tc.refused > 0 {
				p := ps[2]
				p.EvictionRefusedSince, p.EvictionRefusal = plantest.PassAt.Add(-tc.refused), twoBudgets
				ps[2] = p
			}
			s := plan.State{Name: "c", Namespace: "ns", Size: 3, Bootstrapped: true, MembersKnown: true,
				Members: []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, Pods: ps,
				Statuses: map[int]etcdfacts.Status{0: plantest.Reporting(0, "3.5.35", 1000), 1: plantest.Reporting(1, "3.5.35", 1000),
					2: plantest.Reporting(2, "3.5.35", 1000)},
				Persistent: true, TargetVersion: "3.6.16", Version: "3.5.35", Now: plantest.PassAt, Claims: map[int]plan.ClaimView{},
				Budget: &plan.BudgetView{Name: "c", Counted: true, Allowed: 1, Healthy: 3, Desired: 2}}
			st := Compute(c, s, plan.Plan(s))
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			if p := meta.FindStatusCondition(st.Conditions, string(api.ConditionProgressing)); p == nil || p.Reason != string(api.ReasonUpgrading) {
				t.Errorf("Progressing = %+v, want %s: the rollout keeps trying", p, api.ReasonUpgrading)
			}
			deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded))
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
