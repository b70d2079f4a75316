package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ClusterPhase is a one-word summary of a cluster's state, for humans. Automation should read
// the conditions instead.
type ClusterPhase string

// The phases a cluster goes through.
const (
	// PhasePending: no member exists yet.
	PhasePending ClusterPhase = "Pending"
	// PhaseBootstrapping: the seed member is starting.
	PhaseBootstrapping ClusterPhase = "Bootstrapping"
	// PhaseScaling: members are being added or removed toward spec.size.
	PhaseScaling ClusterPhase = "Scaling"
	// PhaseRecovering: a lost member is being replaced.
	PhaseRecovering ClusterPhase = "Recovering"
	// PhaseRollingOut: members are rolled one at a time to a new version or pod template.
	PhaseRollingOut ClusterPhase = "RollingOut"
	// PhaseRunning: every member is healthy and the size is spec.size.
	PhaseRunning ClusterPhase = "Running"
	// PhaseDegraded: the cluster needs a repair the operator cannot make now.
	PhaseDegraded ClusterPhase = "Degraded"
	// PhasePaused: spec.paused is set; nothing is changed.
	PhasePaused ClusterPhase = "Paused"
	// PhaseDeleting: the cluster is being deleted and the operator deletes its claims
	// (whenDeleted Delete) before it lets the object go.
	PhaseDeleting ClusterPhase = "Deleting"
)

// ConditionType names a condition of an EtcdCluster.
type ConditionType string

// The condition types of an EtcdCluster.
const (
	// ConditionAvailable is True when the cluster serves reads and writes: a healthy majority
	// of its voting members follows a leader and no alarm blocks writes. Whether it matches
	// its spec is Progressing's to say.
	ConditionAvailable ConditionType = "Available"
	// ConditionProgressing is True while the operator is changing the cluster toward its
	// spec (or waiting for a step under way); False with Reconciled once it matches it.
	ConditionProgressing ConditionType = "Progressing"
	// ConditionDegraded is True when something is wrong that needs a repair the operator
	// refuses or cannot make, or the user: its reason says what.
	ConditionDegraded ConditionType = "Degraded"
)

// ConditionReason is the machine-readable reason of a condition.
type ConditionReason string

// The reasons the conditions carry.
const (
	// ReasonClusterHealthy: every member is healthy and voting, and the size is spec.size.
	ReasonClusterHealthy ConditionReason = "ClusterHealthy"
	// ReasonMembersUnhealthy: some members are not healthy or not voting.
	ReasonMembersUnhealthy ConditionReason = "MembersUnhealthy"
	// ReasonSizeMismatch: the member count differs from spec.size.
	ReasonSizeMismatch ConditionReason = "SizeMismatch"
	// ReasonNoQuorum: fewer than a majority of the voting members are healthy.
	ReasonNoQuorum ConditionReason = "NoQuorum"
	// ReasonBootstrapping: the seed member is being created.
	ReasonBootstrapping ConditionReason = "Bootstrapping"
	// ReasonScalingUp: a member is being added.
	ReasonScalingUp ConditionReason = "ScalingUp"
	// ReasonScalingDown: a member is being removed.
	ReasonScalingDown ConditionReason = "ScalingDown"
	// ReasonRestartingMember: a member whose pod is gone is restarted on its claim, with its
	// data and member ID.
	ReasonRestartingMember ConditionReason = "RestartingMember"
	// ReasonClaimPending: a member's claim waits for a volume.
	ReasonClaimPending ConditionReason = "ClaimPending"
	// ReasonReplacingMember: a lost member is being replaced under the same name.
	ReasonReplacingMember ConditionReason = "ReplacingMember"
	// ReasonReconciled: the cluster matches its spec; nothing to do.
	ReasonReconciled ConditionReason = "Reconciled"
	// ReasonPaused: spec.paused is set.
	ReasonPaused ConditionReason = "Paused"
	// ReasonWaiting: a step waits for the cluster to become healthy before it may proceed.
	ReasonWaiting ConditionReason = "Waiting"
	// ReasonQuorumAtRisk: the next step was refused because it could cost quorum.
	ReasonQuorumAtRisk ConditionReason = "QuorumAtRisk"
	// ReasonTLSSecretInvalid: a Secret spec.tls names, or one the operator keeps for the
	// cluster's certificates, cannot be used: missing, lacking a key, expired or not yet
	// valid, not matching its key or CA, or lacking a member's name. Members keep running on
	// the certificates they have; none is started on the Secret until it is fixed.
	ReasonTLSSecretInvalid ConditionReason = "TLSSecretInvalid"
	// ReasonCertificateExpiring: a certificate of a Secret spec.tls names is in the last
	// sixth of its life and was not renewed.
	ReasonCertificateExpiring ConditionReason = "CertificateExpiring"
	// ReasonInvalidSpec: the spec asks for something the operator cannot do.
	ReasonInvalidSpec ConditionReason = "InvalidSpec"
	// ReasonVersionChangeUnsupported: spec.version is not a step the operator can take from
	// the version the cluster runs (a skipped minor, a major change, a minor downgrade of a
	// cluster whose members all run the newer minor); the members keep the version they run.
	ReasonVersionChangeUnsupported ConditionReason = "VersionChangeUnsupported"
	// ReasonUpgrading: members are rolled, one at a time, to a newer spec.version.
	ReasonUpgrading ConditionReason = "Upgrading"
	// ReasonDowngrading: members are rolled, one at a time, to an older spec.version.
	ReasonDowngrading ConditionReason = "Downgrading"
	// ReasonRollingPods: member pods built from an earlier spec.pod (or an earlier operator)
	// are rolled, one at a time, at the same etcd version.
	ReasonRollingPods ConditionReason = "RollingPods"
	// ReasonRolloutStuck: a rolled member did not come back (started, healthy, voting, on
	// the new version, caught up) within the rollout's bound; no other member is touched.
	ReasonRolloutStuck ConditionReason = "RolloutStuck"
	// ReasonDisruptionBudget: the rollout's next member is healthy and every member is back,
	// and the cluster's disruption budget has allowed no disruption for longer than the
	// rollout's bound (a drain holds it, or the disruption controller does not count it); the
	// rollout waits for it, and Progressing says so from the start.
	ReasonDisruptionBudget ConditionReason = "DisruptionBudget"
	// ReasonEvictionRefused: the API server has refused the rollout's eviction of a member pod
	// for longer than the rollout's bound although the cluster's own disruption budget allows
	// it (a second budget selects the member pods, or one of the cluster's name is not the
	// cluster's); the message quotes the API server. The rollout keeps trying, one eviction
	// every few seconds, and goes on once one succeeds.
	ReasonEvictionRefused ConditionReason = "EvictionRefused"
	// ReasonQuorumLost: a majority of the members' data is gone for good and at least one
	// member's data is left; spec.recovery.quorumLoss says what happens. The Degraded
	// condition's lastTransitionTime is when the loss was first reported: FromSurvivor counts
	// its grace period from then.
	ReasonQuorumLost ConditionReason = "QuorumLost"
	// ReasonRecoveringQuorum: the cluster is being recovered from a quorum lost for good,
	// from one survivor.
	ReasonRecoveringQuorum ConditionReason = "RecoveringQuorum"
	// ReasonEtcdUnreachable: no member answered the operator.
	ReasonEtcdUnreachable ConditionReason = "EtcdUnreachable"
	// ReasonForeignObject: a pod, claim or Service has the name of one of the cluster's
	// objects and is not the cluster's (no controller reference to it, and nothing that proves
	// it was made for it). The operator leaves it alone and does not act on that member until
	// it is gone; the message names each such object.
	ReasonForeignObject ConditionReason = "ForeignObject"
	// ReasonRestoreFailed: the snapshot spec.bootstrap.fromBackup names cannot be found (no
	// such EtcdBackup, or one that has not succeeded): the seed is not created, and no empty
	// cluster is started in its place. A snapshot found but missing, truncated or corrupt on
	// its volume stops the seed's member-init instead (PodCannotStart, quoting it).
	ReasonRestoreFailed ConditionReason = "RestoreFailed"
	// ReasonRotatingCA: a CA rotation waits for the members between two of its steps (for
	// every member to accept the new CA before leaves of it are issued, for every member to
	// serve the new leaves before the old CA is dropped); status.tls says which step. The
	// restarts of a rotation are a rollout, reported as RollingPods.
	ReasonRotatingCA ConditionReason = "RotatingCA"
	// ReasonCARotationStuck: a CA rotation has waited between two of its steps for longer than
	// the kubelet takes to refresh a member's Secret volume; the message names the member and
	// what it answers. Nothing is taken back: members trust the old and the new CA until it
	// goes on.
	ReasonCARotationStuck ConditionReason = "CARotationStuck"
	// ReasonMovingPeers: the members' peer URLs move on or off TLS (spec.tls.peer added or
	// removed on a running cluster), one member at a time, through the move port 2382; the
	// message says which member and where. The restarts between steps are reported as
	// RollingPods.
	ReasonMovingPeers ConditionReason = "MovingPeers"
	// ReasonPeerMoveStuck: a move of the peers waited for the members (healthy, caught up,
	// listening where the next URL goes) for longer than the rollout's bound; nothing is
	// taken back, and the message says what it waits for.
	ReasonPeerMoveStuck ConditionReason = "PeerMoveStuck"
	// ReasonAsExpected: nothing is wrong.
	ReasonAsExpected ConditionReason = "AsExpected"
	// ReasonQuorumHealthy: a majority of the voting members is healthy and follows a leader,
	// and no alarm blocks writes: the cluster serves, though not every member is there or
	// healthy.
	ReasonQuorumHealthy ConditionReason = "QuorumHealthy"
	// ReasonElectingLeader: members answer but none can list the members yet; for a short
	// while this is a leader election, and the other conditions keep what they said.
	ReasonElectingLeader ConditionReason = "ElectingLeader"
	// ReasonPodCannotStart: a member pod has not started for a while and the kubelet or the
	// scheduler says why (image pull, crash loop, configuration, no node).
	ReasonPodCannotStart ConditionReason = "PodCannotStart"
	// ReasonPodRefused: the API server refuses to create a member pod or claim (admission,
	// quota, LimitRange, a missing PriorityClass, an invalid value).
	ReasonPodRefused ConditionReason = "PodRefused"
	// ReasonPodStuckTerminating: a member pod is past its grace period and still not gone,
	// typically on a node that stopped answering; only the user can force it.
	ReasonPodStuckTerminating ConditionReason = "PodStuckTerminating"
	// ReasonDeletingClaims: the cluster is being deleted with whenDeleted Delete; the
	// operator deletes its claims, then removes its finalizer and lets the cluster go.
	ReasonDeletingClaims ConditionReason = "DeletingClaims"
	// ReasonClaimDeletionRefused: the cluster is being deleted with whenDeleted Delete and
	// the API server refuses to delete one of its claims; the cluster waits, with the
	// finalizer FinalizerClaims, until the claim can be deleted or whenDeleted is Retain.
	ReasonClaimDeletionRefused ConditionReason = "ClaimDeletionRefused"
	// ReasonAlarmNoSpace: a member raised etcd's NOSPACE alarm: its backend reached its
	// quota and the cluster refuses writes until the alarm is disarmed.
	ReasonAlarmNoSpace ConditionReason = "AlarmNoSpace"
	// ReasonAlarmCorrupt: a member raised etcd's CORRUPT alarm: its data differs from the
	// others' and the cluster refuses writes.
	ReasonAlarmCorrupt ConditionReason = "AlarmCorrupt"
)

// EtcdClusterStatus is what the operator last observed of a cluster.
type EtcdClusterStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is a one-word summary of the cluster's state.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// Conditions: Available, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Size is the number of members in etcd's member list.
	// +optional
	Size int32 `json:"size"`

	// ReadyMembers is the number of members that are started, healthy and voting.
	// +optional
	ReadyMembers int32 `json:"readyMembers"`

	// Selector is the label selector of the member pods, in string form, for the scale
	// subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Members lists etcd's members, ordered by name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Members []MemberStatus `json:"members,omitempty"`

	// CurrentVersion is the etcd version the members run.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// ServiceName is the headless Service that gives each member its stable DNS name.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// ClientURL is the URL clients in the cluster use to reach etcd.
	// +optional
	ClientURL string `json:"clientURL,omitempty"`

	// TLS reports the cluster's certificates: their expiry, and the Secret for clients.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`
}

// MemberStatus is one etcd member as the operator last saw it.
type MemberStatus struct {
	// Name is the member's name, which is also its pod's name.
	Name string `json:"name"`
	// ID is etcd's member ID, in hexadecimal.
	// +optional
	ID string `json:"id,omitempty"`
	// Ready is true when the member answered a health check and is a voting member.
	// +optional
	Ready bool `json:"ready"`
	// Leader is true for the member that leads the raft group.
	// +optional
	Leader bool `json:"leader,omitempty"`
	// Learner is true while the member is a non-voting learner catching up.
	// +optional
	Learner bool `json:"learner,omitempty"`
	// Claim is the PersistentVolumeClaim that holds the member's data; empty when the data
	// is in an emptyDir that goes with the pod.
	// +optional
	Claim string `json:"claim,omitempty"`
	// Version is the etcd version the member runs, as it reports it; empty while it does not
	// answer.
	// +optional
	Version string `json:"version,omitempty"`
	// PodCurrent is true when the member's pod was built from the current spec (version and
	// pod template); false while a rollout has still to reach it.
	// +optional
	PodCurrent bool `json:"podCurrent"`
}
