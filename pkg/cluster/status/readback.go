package status

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// What a pass reads back from the status an earlier pass wrote: the instants some conditions
// record (when a quorum loss was first reported, when an election was first seen), which the
// planner counts its bounds from, so that a restarted operator counts from the same instant.

// QuorumLoss reads how the cluster recovers from a quorum lost for good: spec.recovery
// with its defaults, the annotation, and when the loss was first reported.
func QuorumLoss(c *api.EtcdCluster) plan.QuorumLossView {
	v := plan.QuorumLossView{Policy: api.QuorumLossManual,
		Grace:       time.Duration(api.DefaultQuorumLossGracePeriodSeconds) * time.Second,
		RecoverFrom: c.Annotations[api.AnnotationRecoverQuorum]}
	if r := c.Spec.Recovery; r != nil {
		if r.QuorumLoss != "" {
			v.Policy = r.QuorumLoss
		}
		if r.GracePeriodSeconds != nil {
			v.Grace = time.Duration(*r.GracePeriodSeconds) * time.Second
		}
	}
	if quorumLostReported(c.Status.Conditions) {
		v.Since = meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded)).LastTransitionTime.Time
	}
	return v
}

// ElectingSince is when members were first seen answering without a member list, as the
// Progressing condition says; zero when it does not.
func ElectingSince(c *api.EtcdCluster) time.Time {
	if !electionReported(c.Status.Conditions) {
		return time.Time{}
	}
	return meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionProgressing)).LastTransitionTime.Time
}

// quorumLostReported: the conditions report a quorum lost for good already.
func quorumLostReported(conds []metav1.Condition) bool {
	deg := meta.FindStatusCondition(conds, string(api.ConditionDegraded))
	return deg != nil && deg.Status == metav1.ConditionTrue && deg.Reason == string(api.ReasonQuorumLost)
}

// electionReported: Progressing reports members answering without a member list already.
func electionReported(conds []metav1.Condition) bool {
	p := meta.FindStatusCondition(conds, string(api.ConditionProgressing))
	return p != nil && p.Status == metav1.ConditionTrue && p.Reason == string(api.ReasonElectingLeader)
}
