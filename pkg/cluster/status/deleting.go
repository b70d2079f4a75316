package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// Deleting is the status of a cluster being deleted whose finalizer waits: its claims are
// being deleted (whenDeleted Delete), and refused, when not empty, is why one of them cannot
// be. Available and the members stay as the last pass before the deletion saw them: nothing
// is observed of a cluster being deleted.
func Deleting(c *api.EtcdCluster, refused string) api.EtcdClusterStatus {
	st := *c.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.Phase = api.PhaseDeleting
	degraded := condition{metav1.ConditionFalse, api.ReasonAsExpected, "nothing is wrong"}
	if refused != "" {
		degraded = condition{metav1.ConditionTrue, api.ReasonClaimDeletionRefused, refused +
			"; the cluster is deleted once the claim can be, or once whenDeleted is Retain (which keeps every claim)"}
	}
	for _, cond := range []struct {
		t api.ConditionType
		condition
	}{
		{api.ConditionProgressing, condition{metav1.ConditionTrue, api.ReasonDeletingClaims,
			"the cluster is deleted with whenDeleted Delete: its claims are deleted, then its finalizer " + api.FinalizerClaims + " is removed"}},
		{api.ConditionDegraded, degraded},
	} {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(cond.t), Status: cond.status,
			Reason: string(cond.reason), Message: cond.message, ObservedGeneration: c.Generation})
	}
	return st
}
