package member

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// DisruptionBudgetName is the name of the PodDisruptionBudget of the cluster's member pods.
func DisruptionBudgetName(cluster string) string { return cluster }

// DisruptionBudget lets voluntary evictions (kubectl drain, a node upgrade) take member pods
// only while a majority of the members stays ready: for 3 members one at a time, and none
// while a member is already down, since the budget counts the ready pods. The majority is of
// spec.size or of the members the cluster last reported, whichever is larger: while 5 members
// shrink to 3, quorum is still 3 of the 5. A one- or two-member cluster allows no eviction:
// each of its members is needed for quorum.
//
// A member pod that is not Ready may be evicted only while the budget is met without it
// (IfHealthyBudget, set explicitly so that no one's edit and no change of Kubernetes' default
// turns it into AlwaysAllow): an etcd pod that is not Ready may still hold a member's only
// copy of recent data (one catching up after a restart), and with quorum lost none of the
// pods is Ready. The operator's own deletions of such pods do not go through the Eviction
// API (pkg/cluster/plan/plan_budget.go), so the budget never holds back a repair.
func DisruptionBudget(c *api.EtcdCluster) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(max(c.Spec.Size, c.Status.Size)/2 + 1)
	ifHealthy := policyv1.IfHealthyBudget
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: ownedMeta(c, DisruptionBudgetName(c.Name)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               &minAvailable,
			Selector:                   &metav1.LabelSelector{MatchLabels: selectorLabels(c.Name)},
			UnhealthyPodEvictionPolicy: &ifHealthy,
		},
	}
}
