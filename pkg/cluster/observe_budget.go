package cluster

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// observeBudget reads the cluster's own disruption budget from the cache, for the rollout to
// wait while it allows no disruption (plan/plan_budget.go); nil when there is none of the
// cluster's (a budget of its name that is someone else's is not the cluster's to read: the
// Eviction API still applies it).
func (r *Reconciler) observeBudget(c *api.EtcdCluster) (*policyv1.PodDisruptionBudget, error) {
	b, err := r.deps.Budgets.PodDisruptionBudgets(c.Namespace).Get(member.DisruptionBudgetName(c.Name))
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting disruption budget: %w", err)
	case !metav1.IsControlledBy(b, c):
		return nil, nil
	}
	return b, nil
}

// budgetView is the planner's view of the cluster's disruption budget, nil when it has none.
func (o *observation) budgetView() *plan.BudgetView {
	b := o.budget
	if b == nil {
		return nil
	}
	v := &plan.BudgetView{
		Name:    b.Name,
		Counted: b.Status.ObservedGeneration >= b.Generation,
		Allowed: int(b.Status.DisruptionsAllowed),
		Healthy: int(b.Status.CurrentHealthy),
		Desired: int(b.Status.DesiredHealthy),
	}
	for name := range b.Status.DisruptedPods {
		v.Evicted = append(v.Evicted, name)
	}
	slices.Sort(v.Evicted)
	for _, c := range b.Status.Conditions {
		if c.Type == policyv1.DisruptionAllowedCondition && c.Status == metav1.ConditionFalse {
			v.Since = c.LastTransitionTime.Time
		}
	}
	if !v.Since.IsZero() {
		v.Since = laterOf(v.Since, o.lastReady())
	}
	return v
}

// lastReady is when a member pod last became Ready: zero when none is.
func (o *observation) lastReady() time.Time {
	var last time.Time
	for _, p := range o.pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				last = laterOf(last, c.LastTransitionTime.Time)
			}
		}
	}
	return last
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
