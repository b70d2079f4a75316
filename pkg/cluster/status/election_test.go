package status

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

// A short election keeps Available and Degraded as they were (no flip, no Warning); past the
// bound, counted from Progressing's lastTransitionTime, the cluster is reported without quorum.
func TestStatusLeaderElection(t *testing.T) {
	c := newCluster(3)
	c.Name = "c"
	healthy := plan.State{Name: "c", Size: 3, Bootstrapped: true, MembersKnown: true, Members: []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, Now: plantest.PassAt.Add(-time.Hour)}
	c.Status = Compute(c, healthy, plan.Decision{})
	if !meta.IsStatusConditionTrue(c.Status.Conditions, string(api.ConditionAvailable)) {
		t.Fatalf("a healthy cluster is not Available: %+v", c.Status.Conditions)
	}
	availableAt := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionAvailable)).LastTransitionTime

	s := plantest.NoList(plantest.PassAt, ElectingSince(c))
	c.Status = Compute(c, s, plan.Plan(s))
	avail := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionAvailable))
	deg := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded))
	prog := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionProgressing))
	if avail.Status != metav1.ConditionTrue || !avail.LastTransitionTime.Equal(&availableAt) || deg.Status != metav1.ConditionFalse {
		t.Errorf("during a short election: Available %+v, Degraded %+v; want them unchanged", avail, deg)
	}
	if prog.Reason != string(api.ReasonElectingLeader) || !prog.LastTransitionTime.Time.Equal(plantest.PassAt) {
		t.Errorf("Progressing %+v, want ElectingLeader since %s", prog, plantest.PassAt)
	}
	if c.Status.Phase != api.PhaseRunning {
		t.Errorf("phase %s during a short election, want Running as before", c.Status.Phase)
	}
	if len(c.Status.Members) != 3 || !c.Status.Members[0].Ready {
		t.Errorf("members %+v, want them as last listed", c.Status.Members)
	}

	// A later pass within the bound: the time stays.
	s = plantest.NoList(plantest.PassAt.Add(plan.DefaultElectionBound/2), ElectingSince(c))
	c.Status = Compute(c, s, plan.Plan(s))
	if got := ElectingSince(c); !got.Equal(plantest.PassAt) {
		t.Errorf("election read back as since %s, want %s", got, plantest.PassAt)
	}
	// Past the bound.
	s = plantest.NoList(plantest.PassAt.Add(plan.DefaultElectionBound), ElectingSince(c))
	c.Status = Compute(c, s, plan.Plan(s))
	avail = meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionAvailable))
	deg = meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded))
	if avail.Status != metav1.ConditionFalse || deg.Status != metav1.ConditionTrue || deg.Reason != string(api.ReasonNoQuorum) ||
		!strings.Contains(deg.Message, "c-0 (term 3, no leader) answer") {
		t.Errorf("past the bound: Available %+v, Degraded %+v; want NoQuorum naming c-0", avail, deg)
	}
}
