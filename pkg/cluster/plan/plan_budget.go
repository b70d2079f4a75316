package plan

import (
	"fmt"
	"strings"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// The rollout and the cluster's disruption budget. A drain's evictions go through the
// Eviction API, which lets the budget refuse them; the rollout's own restarts of serving
// members count against the same budget, or a drain and a rollout could take two members at
// once (on emptyDir, two members' data). So the rollout's deletion of a healthy member's
// Ready pod is an eviction (Action.Evict), which the API server checks against the budget
// in the same way as a drain's, one at a time; and before any step that takes such a member
// down (a restart in place and a replacement's removal included, which no eviction covers),
// the rollout waits while the budget's status allows no disruption. Deletions that take down
// no serving member (a pod that is not Ready, a removed member's, a forced survivor's, one
// whose data is gone) stay plain deletes: the budget never holds back a repair.

// BudgetView is the cluster's own disruption budget as the disruption controller last
// counted it.
type BudgetView struct {
	Name string
	// Counted: the disruption controller has counted the budget's current spec (its status'
	// observedGeneration); until then the Eviction API refuses every eviction it covers.
	Counted bool
	// Allowed is status.disruptionsAllowed; Healthy the member pods the budget counts Ready,
	// Desired how many it needs Ready.
	Allowed, Healthy, Desired int
	// Evicted are the pods evicted whose deletion the budget has not seen yet
	// (status.disruptedPods).
	Evicted []string
	// Since is when the budget last came to allow no disruption, or when a member pod last
	// became Ready, whichever is later: how long the budget has held back a rollout whose
	// members are all back. Zero when unknown.
	Since time.Time
}

// disrupts says whether taking member m down (its pod deleted, its etcd restarted in place,
// or the member removed to be replaced) disrupts a member that serves: it is healthy, its pod
// is Ready, and it is not the cluster's only member. A member that is down already costs the
// budget nothing more. A single member's budget never allows a disruption: its user chose a
// restart's outage with size 1, and there is no second member a drain could take meanwhile.
func disrupts(s State, m MemberView, alone bool) bool {
	p, ok := s.Pods[m.Ordinal]
	return ok && m.Healthy && !p.NotReady && !alone
}

// budgetHolds is the rollout's wait for the disruption budget before member m is taken down:
// while the budget's status allows no disruption, nothing is touched. Past the Comeback bound,
// counted from Since, Degraded says so too.
func budgetHolds(s State, m MemberView, reason api.ConditionReason, progress string) (Decision, bool) {
	b := s.Budget
	if b == nil || (b.Counted && b.Allowed > 0) {
		return Decision{}, false
	}
	why := b.holdsBecause()
	d := Decision{Progress: reason, Message: fmt.Sprintf("waiting for the disruption budget %s to allow a disruption before member %s is rolled: %s%s",
		b.Name, naming.Name(s.Name, m.Ordinal), why, progress)}
	if !b.Since.IsZero() && s.Now.Sub(b.Since) > s.bounds().Comeback {
		d.Blocked = api.ReasonDisruptionBudget
		d.Report = fmt.Sprintf("the rollout has waited more than %s for the disruption budget %s although every member is back: %s. A drain holds it until the member it evicted is back; otherwise look at what else selects or evicts the member pods",
			s.bounds().Comeback, b.Name, why)
	}
	return d, true
}

// holdsBecause says why the budget allows no disruption.
func (b BudgetView) holdsBecause() string {
	if !b.Counted {
		return "the disruption controller has not counted its current spec yet"
	}
	why := fmt.Sprintf("it allows none now (%d member pods healthy, %d needed)", b.Healthy, b.Desired)
	if len(b.Evicted) > 0 {
		why += "; evicted and not gone yet: " + strings.Join(b.Evicted, ", ")
	}
	return why
}

// evictionRefusedTooLong adds to decision d, the rollout's eviction of the pod of member
// ordinal, that the API server has refused that eviction for longer than the Comeback bound,
// counted from the first refusal recorded on the pod. The cluster's budget allowed it each
// time (or the cluster has none of its own), so what refuses is something the budget does not
// show: Degraded quotes the API server and says what to do. The eviction is still tried on
// every pass, and goes ahead once it is allowed; the pod it is recorded on goes with it.
func evictionRefusedTooLong(s State, ordinal int, d Decision) Decision {
	p := s.Pods[ordinal]
	bound := s.bounds().Comeback
	if p.EvictionRefusedSince.IsZero() || s.Now.Sub(p.EvictionRefusedSince) <= bound {
		return d
	}
	d.Blocked = api.ReasonEvictionRefused
	d.Report = fmt.Sprintf("the API server has refused to evict pod %s for more than %s (since %s): %s. %s",
		naming.Name(s.Name, ordinal), bound, p.EvictionRefusedSince.UTC().Format(time.RFC3339), p.EvictionRefusal, evictionAdvice(s))
	return d
}

// evictionAdvice says what to do about evictions refused for a reason the cluster's budget
// does not show.
func evictionAdvice(s State) string {
	pdbs := "kubectl get pdb"
	if s.Namespace != "" {
		pdbs += " -n " + s.Namespace
	}
	if s.Budget != nil {
		return fmt.Sprintf("While another PodDisruptionBudget selects the member pods, every eviction of them fails, the rollout's and kubectl drain's: "+
			"find it (%s) and delete it; the one the operator keeps is %s", pdbs, s.Budget.Name)
	}
	return fmt.Sprintf("The cluster has no disruption budget of its own: the PodDisruptionBudget named %s is not the operator's (or could not be made). "+
		"Delete it, and any other budget that selects the member pods (%s): the operator then makes its own", s.Name, pdbs)
}
