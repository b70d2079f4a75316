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
func DisruptionBudget(c *api.EtcdCluster) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(max(c.Spec.Size, c.Status.Size)/2 + 1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: ownedMeta(c, DisruptionBudgetName(c.Name)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: selectorLabels(c.Name)},
		},
	}
}
