package plan

// What the planner decides from (State, with its views of members and pods) and what it
// decides (a Decision of at most one Action). plan.go holds the rules.

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// ActionKind is the kind of change a pass makes.
type ActionKind string

// The actions a pass can take, at most one per pass.
const (
	ActionCreatePod    ActionKind = "CreatePod"
	ActionDeletePod    ActionKind = "DeletePod"
	ActionAddLearner   ActionKind = "AddLearner"
	ActionPromote      ActionKind = "PromoteLearner"
	ActionRemoveMember ActionKind = "RemoveMember"
	ActionMoveLeader   ActionKind = "MoveLeader"
	ActionDeleteClaim  ActionKind = "DeleteClaim"
	// ActionChooseSurvivor writes the survivor to recover a quorum lost for good from in the
	// cluster's AnnotationRecoverQuorum, in place of "highest".
	ActionChooseSurvivor ActionKind = "ChooseSurvivor"
	// ActionForceNewCluster restarts the survivor with --force-new-cluster: its pod is
	// deleted, then made again with the flag.
	ActionForceNewCluster ActionKind = "ForceNewCluster"
)

// Action is one change to the world.
type Action struct {
	Kind ActionKind
	// Ordinal of the member or pod the action is about.
	Ordinal int
	// MemberID is the etcd member acted on (AddLearner: none yet); for CreatePod, the member
	// the pod restarts, when it is known to have started.
	MemberID uint64
	// Transferee is the member that receives leadership (MoveLeader).
	Transferee uint64
	// ClusterState and InitialCluster describe the pod to create (CreatePod).
	ClusterState   etcdfacts.ClusterState
	InitialCluster []int
	// RaftIndex is the survivor's raft index (ChooseSurvivor, ForceNewCluster), 0 when it
	// does not answer.
	RaftIndex uint64
	// Version is the release etcd's downgrade is enabled for (EnableDowngrade).
	Version string
	// PodVersion is the etcd version the member's pod is built with (CreatePod,
	// ForceNewCluster, RestartInPlace): the State's TargetVersion.
	PodVersion string
	// MaxLearners is the --max-learners the pod is built with (CreatePod, ForceNewCluster):
	// LearnerCap for a version that takes the flag, 0 (no flag) otherwise.
	MaxLearners int
	// PeerURL is where the member's peer URL goes (MovePeerURL).
	PeerURL string
	// Evict (RollMember): the pod's deletion takes down a healthy member that serves, so it
	// goes through the Eviction API and the disruption budget arbitrates between the rollout
	// and a drain (plan_budget.go). Every other deletion of a pod is a plain delete.
	Evict bool
}

// withPodVersion puts the version the pod is built with in an action that builds one: the
// TargetVersion, but for a member that joins while other pods' etcds may hold the add of a
// second learner (joinVersion, plan_join.go). A survivor forced into a cluster of one restarts
// on the version it ran, not the target: a spec.version changed while quorum was lost would
// otherwise start --force-new-cluster on a newer etcd over the survivor's older log; the
// rollout upgrades it once the cluster is back.
func withPodVersion(s State, d Decision) Decision {
	a := d.Action
	if a == nil || (a.Kind != ActionCreatePod && a.Kind != ActionForceNewCluster && a.Kind != ActionRestartInPlace) {
		return d
	}
	a.PodVersion = s.TargetVersion
	if v := joinVersion(s, a.Ordinal); v != "" && isJoin(s, a) {
		a.PodVersion = v
	}
	if a.Kind == ActionForceNewCluster {
		if v := survivorVersion(s, a.Ordinal); v != "" {
			a.PodVersion = v
		}
	}
	if a.Kind != ActionRestartInPlace && etcdfacts.TakesMaxLearners(a.PodVersion) {
		a.MaxLearners = LearnerCap
	}
	return d
}

// survivorVersion is the etcd version member o last ran: as it answers now, as its pod runs,
// or as status last listed it; empty when none says.
func survivorVersion(s State, o int) string {
	if st, ok := s.Statuses[o]; ok && st.Version != "" {
		return st.Version
	}
	if p, ok := s.Pods[o]; ok && p.Version != "" {
		return p.Version
	}
	for _, m := range s.LastMembers {
		if m.Ordinal == o {
			return m.Version
		}
	}
	return ""
}

// Decision is what the planner concluded.
type Decision struct {
	// Action is nil when nothing is to be done now.
	Action *Action
	// Progress is the Progressing reason while the cluster is being changed; empty when the
	// cluster matches its spec.
	Progress api.ConditionReason
	// Blocked is set when a needed step is refused or impossible; Message says why.
	Blocked api.ConditionReason
	// Message explains Progress or Blocked to a human.
	Message string
	// Report, when set, is what the Degraded condition says about Blocked while Message says
	// what the step under way does (a quorum lost for good, being recovered).
	Report string
}

// MemberView is one etcd member as a pass saw it.
type MemberView struct {
	// Ordinal from the member's name and peer URL host; -1 for a member not the operator's.
	Ordinal int
	ID      uint64
	// Name is empty until the member has started.
	Name    string
	Learner bool
	// PeerURL is the member's peer URL as etcd lists it.
	PeerURL string
	// Healthy: the member answered a status request through its pod IP.
	Healthy bool
	Leader  bool
}

// PodView is one member pod as a pass saw it.
type PodView struct {
	Ordinal     int
	Phase       corev1.PodPhase
	Terminating bool
	// Published: the pod's DNS record is in the headless Service's EndpointSlices and cluster
	// DNS answers for its name: a lookup of it now cannot cache a negative answer.
	Published bool
	// Node is the node the pod was scheduled to; empty until it is.
	Node string
	// ClusterState and InitialCluster are what the pod's etcd was started with.
	ClusterState   etcdfacts.ClusterState
	InitialCluster []int
	// DataLost: member-init refused to start etcd, because the member has started before
	// and its data dir is empty.
	DataLost bool
	// ForceNewCluster: the pod's etcd starts with --force-new-cluster.
	ForceNewCluster bool
	// MemberID is the member the pod was marked with once it had started (0: none).
	MemberID uint64
	// Problem is why the pod does not start, when the kubelet or the scheduler says so; nil
	// otherwise (see stuck.go).
	Problem *PodProblem
	// DeletionDeadline is the pod's deletion timestamp: the end of its grace period.
	DeletionDeadline time.Time
	// Outdated: the pod was built from an earlier spec or template than the spec builds now
	// (see naming.UpToDate); StaleMetadata: its labels and annotations from spec.pod are not
	// those of the spec.
	Outdated      bool
	StaleMetadata bool
	// ImageOnly: the pod is outdated in its etcd container's image alone, which is changed in
	// place (naming.ImageChange). RestartPending: it was, and the kubelet still reports the
	// container that ran then. RestartedAt is when it was (zero if never).
	ImageOnly      bool
	RestartPending bool
	RestartedAt    time.Time
	// NotReady: the kubelet does not report the pod Ready (its etcd's readiness probe has not
	// passed since the container started).
	NotReady bool
	// PeerListen is what the pod's etcd listens on for its peers (--listen-peer-urls).
	PeerListen peermove.Listen
	// MaxLearners is the --max-learners the pod's etcd was started with; 0 when it was
	// started without the flag (etcd's default of one learner, or etcd 3.5's fixed one).
	MaxLearners int
	// Version is the etcd version the pod runs; Created is when the pod was made; Waiting
	// is why its etcd container is not running, as the kubelet says (ImagePullBackOff).
	Version string
	Created time.Time
	Waiting string
	// EvictionRefusedSince is when the API server first refused to evict the pod under the
	// cluster's current spec, zero if it has not; EvictionRefusal is what it answered last.
	EvictionRefusedSince time.Time
	EvictionRefusal      string
}

// State is everything the planner decides from.
type State struct {
	// Name is the cluster's name; members are named <Name>-<ordinal>. Namespace is its
	// namespace, for the commands messages give.
	Name      string
	Namespace string
	// Size is spec.size.
	Size int
	// Bootstrapped is true once the cluster has ever reported a member (status.size > 0):
	// from then on a missing member list means lost members, never "create a new cluster".
	Bootstrapped bool
	// RestoreProblem, for a cluster restored from a snapshot (spec.bootstrap.fromBackup), says
	// why the snapshot cannot be found (no such EtcdBackup, one that has not succeeded); empty
	// when the seed can be built to restore from it, or nothing is restored.
	RestoreProblem string
	// MembersKnown is false when no member answered.
	MembersKnown bool
	Members      []MemberView
	Pods         map[int]PodView
	// Version is the oldest etcd version a member reports (the one the cluster speaks); empty
	// when no member answered.
	Version string
	// Persistent: members keep their data on claims, Claims by ordinal (the cluster's claims
	// that exist). DeleteScaledClaims: whenScaled is Delete.
	Persistent         bool
	DeleteScaledClaims bool
	Claims             map[int]ClaimView
	// LastMembers are the members status last listed (empty for a cluster applied again
	// over retained claims), and Statuses the answers of the members reached this pass, by
	// ordinal: with no member list they are all the planner knows of the members. Re-adding
	// an ordinal of LastMembers is reported as a replacement rather than a scale-up, unless
	// it is the learner a scale-up added (LastProgress ScalingUp): a reason to report, never
	// one to act on.
	LastMembers  []LastMember
	LastProgress api.ConditionReason
	Statuses     map[int]etcdfacts.Status
	// Foreign are the objects with the name of one of the cluster's objects that are not
	// the cluster's (pkg/cluster/foreign.go).
	Foreign []ForeignObject
	// RefusedServices are the API server's refusals of the cluster's Services this pass, one
	// "service NAME: message" each (a ResourceQuota on Services, an admission policy).
	RefusedServices []string
	// TLS is what the pass found of the cluster's certificates (plan_tls.go).
	TLS TLSView
	// PeerMove is where a move of the peers on or off TLS stands (plan_peer.go).
	PeerMove PeerMoveView
	// ClientTLS: the members' client ports all take TLS now, so clients dial them over TLS;
	// it follows the members, not spec.tls.client, while the port moves (status.clientURL).
	ClientTLS bool
	// TargetVersion is the version member pods are built with now: spec.version, or the
	// version the cluster runs while spec.version is a step the operator does not take (or
	// a downgrade etcd has not enabled yet). SpecVersion is spec.version, normalized.
	TargetVersion string
	SpecVersion   string
	// DowngradeTarget is the version etcd's downgrade API is enabled for, as a member
	// reports it; empty when no downgrade is in progress (plan_downgrade.go).
	DowngradeTarget string
	// Recovery is how a quorum lost for good is recovered; Now is the time of the pass.
	Recovery QuorumLossView
	Now      time.Time
	// Bounds are how long the rules let a state last (bounds.go), as the operator was
	// started with; a zero field is its production default.
	Bounds Bounds
	// ElectingSince is when the pass first found members answering without a member list
	// (the Progressing condition's lastTransitionTime while its reason is ElectingLeader);
	// zero when it is not reported.
	ElectingSince time.Time
	// Alarms are the alarms etcd reports, by member (see alarms.go).
	Alarms []AlarmView
	// Budget is the cluster's own disruption budget as the disruption controller last counted
	// it; nil when the cluster has none of its own (not made yet, or one of its name is
	// someone else's): the Eviction API alone arbitrates then.
	Budget *BudgetView
}

// Unschedulable: the scheduler found no node for the pod (Problem says so: observe reads it
// from the pod's PodScheduled condition, for a pod that is not terminating).
func (p PodView) Unschedulable() bool {
	return p.Problem != nil && p.Problem.Reason == corev1.PodReasonUnschedulable
}

// PodCondition says what a member's pod tells about why the member does not answer.
func PodCondition(pods map[int]PodView, ordinal int) string {
	p, ok := pods[ordinal]
	on := ""
	if p.Node != "" {
		on = " on node " + p.Node
	}
	switch {
	case !ok:
		return "its pod is gone"
	case p.Terminating:
		// A pod on a node that stopped answering stays terminating until the node is
		// deleted or the pod force-deleted; see the README on node loss.
		return "its pod is terminating" + on
	case p.DataLost:
		return "its data dir is empty although it has started before; it is replaced" + on
	case p.Unschedulable():
		return "its pod cannot be scheduled"
	case p.Phase != corev1.PodRunning:
		return fmt.Sprintf("its pod is %s%s", p.Phase, on)
	case p.Waiting != "":
		return "its etcd container waits: " + p.Waiting + on
	default:
		return "etcd does not answer at its pod" + on
	}
}
