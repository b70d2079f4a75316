package cluster

// The reasons of the Events the operator records, all in one place.

// EventReason is the reason of an Event the operator records.
type EventReason string

// Event reasons: one Event per action that changed the world.
const (
	EventPodCreated       EventReason = "PodCreated"
	EventPodDeleted       EventReason = "PodDeleted"
	EventClaimCreated     EventReason = "ClaimCreated"
	EventClaimDeleted     EventReason = "ClaimDeleted"
	EventStorageDefaulted EventReason = "StorageDefaulted"
	EventMemberAdded      EventReason = "MemberAdded"
	EventMemberPromoted   EventReason = "MemberPromoted"
	EventMemberRemoved    EventReason = "MemberRemoved"
	EventLeaderMoved      EventReason = "LeaderMoved"
	EventServiceCreated   EventReason = "ServiceCreated"
	// EventCAIssued: the operator made one of the cluster's CAs (tls.go).
	EventCAIssued EventReason = "CAIssued"
	// The steps of a CA rotation (tls_rotation.go): started (a new CA made, or a user's CA
	// changed: the members' Secrets trust both), leaves issued by the new CA (every member
	// trusts it), the old CA dropped (every member serves the new leaves).
	EventCARotationStarted  EventReason = "CARotationStarted"
	EventCARotationReissued EventReason = "CARotationReissued"
	EventCARotationDropped  EventReason = "CARotationDropped"
	EventBudgetCreated      EventReason = "DisruptionBudgetCreated"
	EventBudgetConflict     EventReason = "DisruptionBudgetConflict"
	// EventForeignObject: an object with the name of one of the cluster's objects is not
	// the cluster's; it is left alone.
	EventForeignObject EventReason = "ForeignObject"
	// EventPodAdopted: a member pod with no controller, provably made for this cluster, was
	// taken back.
	EventPodAdopted       EventReason = "PodAdopted"
	EventChangeRefused    EventReason = "ChangeRefused"
	EventClusterAvailable EventReason = "ClusterAvailable"
	EventClusterDegraded  EventReason = "ClusterDegraded"
	// EventPodRefused: the API server refuses a member pod or claim (said once, when the
	// Degraded condition starts saying so).
	EventPodRefused EventReason = "PodRefused"
	// EventPodCannotStart: a member pod has not started within the bound.
	EventPodCannotStart EventReason = "PodCannotStart"
	// EventQuorumRecovery: the survivor to recover a quorum lost for good from was chosen.
	EventQuorumRecovery EventReason = "QuorumRecovery"
	// EventForceNewCluster: the survivor's pod was deleted, or made again, to restart it
	// with --force-new-cluster.
	EventForceNewCluster EventReason = "ForceNewCluster"
	// EventDowngradeEnabled, EventDowngradeCancelled: etcd's downgrade API was asked to
	// start or stop a minor downgrade; EventDowngradeRefused: etcd refused to start it.
	EventDowngradeEnabled   EventReason = "DowngradeEnabled"
	EventDowngradeCancelled EventReason = "DowngradeCancelled"
	EventDowngradeRefused   EventReason = "DowngradeRefused"
	// EventQuorumRecovered: etcd lists members again; the recover-quorum annotation was
	// removed.
	EventQuorumRecovered EventReason = "QuorumRecovered"
)

// Events of a rollout.
const (
	// EventMemberRolled: an out-of-date member's pod was deleted, for the member to come back
	// on the current version and template.
	EventMemberRolled EventReason = "MemberRolled"
	// EventPeerURLMoved: a member's peer URL was moved (etcd's member update) one step of a
	// move of the peers on or off TLS.
	EventPeerURLMoved EventReason = "PeerURLMoved"
	// EventPodPatched: a member pod's labels and annotations (from spec.pod, or the
	// operator's metrics port label) were updated in place.
	EventPodPatched EventReason = "PodPatched"
	// EventPodEvicted: a serving member's pod was evicted for the rollout, within the
	// disruption budget.
	EventPodEvicted EventReason = "PodEvicted"
	// EventEvictionRefused: the API server refused to evict a member pod for the rollout for
	// now (the disruption budget allows no disruption); the rollout waits.
	EventEvictionRefused EventReason = "EvictionRefused"
)

// Events of the cluster's NetworkPolicy.
const (
	EventNetworkPolicyCreated  EventReason = "NetworkPolicyCreated"
	EventNetworkPolicyDeleted  EventReason = "NetworkPolicyDeleted"
	EventNetworkPolicyConflict EventReason = "NetworkPolicyConflict"
)

// Events of a cluster being deleted. EventClaimsRetained: whenDeleted was Retain, the claims
// are kept. EventClaimDeletionRefused: whenDeleted is Delete and the API server refuses to
// delete a claim; the cluster waits with its finalizer. (Each claim deleted: EventClaimDeleted.)
const (
	EventClaimsRetained       EventReason = "ClaimsRetained"
	EventClaimDeletionRefused EventReason = "ClaimDeletionRefused"
)

// EventInstallationConflict: another installation of the operator drives this cluster.
const EventInstallationConflict EventReason = "InstallationConflict"

// EventInstallationTakeover: this installation took the cluster over from one that stopped
// renewing the cluster's Lease.
const EventInstallationTakeover EventReason = "InstallationTakeover"
