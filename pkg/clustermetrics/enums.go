package clustermetrics

import (
	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// The label values of this package's metrics come from closed sets, so that a series' labels
// never carry text from an object (a message, a Secret's name): a value outside its set is
// exported as otherValue. enums_test.go keeps the sets in step with the constants they list.

// otherValue stands for a value outside its closed set (a status written by a newer or an
// older operator, or by hand).
const otherValue = "Other"

// actionKinds are every plan.ActionKind; each cluster exports a count of each, zero until the
// first, so that increase() sees the first action.
var actionKinds = []plan.ActionKind{
	plan.ActionCreatePod, plan.ActionDeletePod, plan.ActionAddLearner, plan.ActionPromote,
	plan.ActionRemoveMember, plan.ActionMoveLeader, plan.ActionDeleteClaim,
	plan.ActionChooseSurvivor, plan.ActionForceNewCluster,
	plan.ActionEnableDowngrade, plan.ActionCancelDowngrade,
	plan.ActionPatchPod, plan.ActionRollMember, plan.ActionRestartInPlace, plan.ActionMovePeerURL,
}

// conditionTypes are the condition types of an EtcdCluster.
var conditionTypes = []api.ConditionType{api.ConditionAvailable, api.ConditionProgressing, api.ConditionDegraded}

// conditionReasons are the reasons an EtcdCluster's conditions carry (status_types.go).
var conditionReasons = []api.ConditionReason{
	api.ReasonClusterHealthy, api.ReasonMembersUnhealthy, api.ReasonSizeMismatch, api.ReasonNoQuorum,
	api.ReasonBootstrapping, api.ReasonScalingUp, api.ReasonScalingDown, api.ReasonRestartingMember,
	api.ReasonClaimPending, api.ReasonReplacingMember, api.ReasonReconciled, api.ReasonPaused,
	api.ReasonWaiting, api.ReasonQuorumAtRisk, api.ReasonTLSSecretInvalid, api.ReasonCertificateExpiring,
	api.ReasonRotatingCA, api.ReasonCARotationStuck, api.ReasonMovingPeers, api.ReasonPeerMoveStuck,
	api.ReasonInvalidSpec, api.ReasonVersionChangeUnsupported, api.ReasonUpgrading, api.ReasonDowngrading,
	api.ReasonRollingPods, api.ReasonRolloutStuck, api.ReasonDisruptionBudget, api.ReasonEvictionRefused,
	api.ReasonQuorumLost, api.ReasonRecoveringQuorum, api.ReasonEtcdUnreachable, api.ReasonForeignObject,
	api.ReasonRestoreFailed, api.ReasonAsExpected, api.ReasonQuorumHealthy, api.ReasonElectingLeader,
	api.ReasonPodCannotStart, api.ReasonPodRefused, api.ReasonPodStuckTerminating, api.ReasonDeletingClaims,
	api.ReasonClaimDeletionRefused, api.ReasonAlarmNoSpace, api.ReasonAlarmCorrupt,
}

// The certificate label's values: the CAs peers and clients trust, and the first of the
// members' certificates to expire (status.tls).
const (
	certPeerCA   = "peer-ca"
	certClientCA = "client-ca"
	certLeaf     = "leaf"
)

// bounded returns v when set holds it, otherValue otherwise.
func bounded[T ~string](v string, set []T) string {
	for _, s := range set {
		if string(s) == v {
			return v
		}
	}
	return otherValue
}
