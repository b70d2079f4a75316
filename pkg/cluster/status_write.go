package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/status"
)

// updateStatus writes the status through the status subresource, only when it changed, and
// records an Event when the cluster becomes available or degraded.
func (r *Reconciler) updateStatus(ctx context.Context, cached *api.EtcdCluster, s plan.State, d plan.Decision) error {
	st := status.Compute(cached, s, d)
	if equality.Semantic.DeepEqual(st, cached.Status) {
		return nil
	}
	wasAvailable := meta.IsStatusConditionTrue(cached.Status.Conditions, string(api.ConditionAvailable))
	oldDegraded := meta.FindStatusCondition(cached.Status.Conditions, string(api.ConditionDegraded))

	c := cached.DeepCopy()
	c.Status = st
	if _, err := r.deps.EtcdClusterClient.EtcdV1alpha1().EtcdClusters(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}

	if avail := meta.FindStatusCondition(st.Conditions, string(api.ConditionAvailable)); avail != nil &&
		avail.Status == metav1.ConditionTrue && !wasAvailable {
		r.event(c, corev1.EventTypeNormal, EventClusterAvailable, "Cluster available: %s", avail.Message)
	}
	if deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded)); deg != nil &&
		deg.Status == metav1.ConditionTrue && (oldDegraded == nil || oldDegraded.Status != metav1.ConditionTrue ||
		oldDegraded.Reason != deg.Reason) {
		reason := EventClusterDegraded
		switch api.ConditionReason(deg.Reason) {
		case api.ReasonQuorumAtRisk:
			reason = EventChangeRefused
		case api.ReasonPodRefused:
			reason = EventPodRefused
		case api.ReasonPodCannotStart:
			reason = EventPodCannotStart
		}
		r.event(c, corev1.EventTypeWarning, reason, "%s", deg.Message)
	}
	return nil
}
