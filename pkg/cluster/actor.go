package cluster

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Result is what an actor call did.
type Result struct {
	// Changed is true when this call changed the world (and recorded an Event); false when
	// the change had already been made, or could not be made yet.
	Changed bool
	// RetryIn, when set, is how soon to look again: the change could not be made yet, and
	// Refused is etcd's answer that said so.
	RetryIn time.Duration
	Refused error
	// MemberID is the member a membership change added (AddLearner), once etcd gave it one.
	MemberID uint64
}

// actor makes every change a pass makes to the world, other than the cluster's status and
// its Events: objects through the API server, membership through etcd. Nothing else in this
// package writes. Every call is idempotent: a change that already happened (the pod exists,
// the member is already there or already gone) is done, not a failure, unless its contract
// says otherwise. A call that changes an object computed from one the pass read carries that
// object's UID as a precondition, so it never lands on a newer object of the same name. Calls
// that return a Result log and record an Event when they changed something. voters are the
// client URLs of the voting members to send a membership change to, the leader first.
type actor interface {
	// CreatePod creates the member's claim first (CreateClaim) when the cluster keeps data on
	// claims, then the pod. A pod of that name that is the cluster's is done; one that is not
	// fails with a foreignError, as does a claim that is not the cluster's.
	CreatePod(ctx context.Context, c *api.EtcdCluster, t member.Template, why string) (Result, error)
	// CreateClaim creates the claim of member ordinal; created is false when a claim of the
	// cluster's of that name exists (used as it is, a retained claim included). A claim of that
	// name that is not the cluster's fails with a foreignError.
	CreateClaim(ctx context.Context, c *api.EtcdCluster, ordinal int) (created bool, err error)
	// DeletePod deletes that very pod (a UID precondition); gone or replaced is done.
	DeletePod(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, why string) (Result, error)
	// EvictPod deletes that very pod (a UID precondition) through the Eviction API, so that
	// the pod's disruption budget arbitrates between this deletion and any other eviction (a
	// drain's); gone or replaced is done. An eviction the API server refuses for now (the
	// budget allows no disruption, or more than one budget covers the pod) fails with an
	// *evictionRefused, recorded in an Event; nothing is deleted then.
	EvictPod(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, why string) (Result, error)
	// DeleteClaim deletes that very claim (a newer claim of the same name is left alone).
	DeleteClaim(ctx context.Context, c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim, why string) (Result, error)
	// SetPodImage changes the etcd container's image of that very pod, as it was read (UID and
	// resourceVersion preconditions), with the annotations that tell the rollout the kubelet
	// restarted it. A pod gone or changed since is no change.
	SetPodImage(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, change podImage, why string) (Result, error)
	// PatchPodMetadata sets and removes the pod's labels and annotations as mp says (a UID
	// precondition). A pod gone or replaced is no change.
	PatchPodMetadata(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, mp member.MetadataPatch) (Result, error)
	// AnnotatePod sets one annotation on that very pod; a pod gone or replaced is done.
	AnnotatePod(ctx context.Context, pod *corev1.Pod, key, value string) error
	// AdoptPod makes the cluster the controlling owner of that very pod, as it was read (UID
	// and resourceVersion preconditions), and returns it adopted. Any failure is returned.
	AdoptPod(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod) (*corev1.Pod, error)
	// AnnotateClaim marks that very claim with the member whose data it holds, and returns it
	// marked. Any failure is returned.
	AnnotateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, id uint64) (*corev1.PersistentVolumeClaim, error)
	// SetClaimAnnotation sets one of the operator's annotations on that very claim (a UID
	// precondition): member.AnnotationDataRanOn, member.AnnotationRemoved; an empty value
	// removes it. It returns the claim as written. Any failure is returned.
	SetClaimAnnotation(ctx context.Context, pvc *corev1.PersistentVolumeClaim, key, value string) (*corev1.PersistentVolumeClaim, error)
	// DisownClaim drops the cluster from the owners of that very claim, as it was read (UID
	// and resourceVersion preconditions): a claim is never the cluster's dependent, which the
	// garbage collector would delete with the cluster whatever whenDeleted says by then. A
	// claim gone is done; any other failure, a conflict included, is returned.
	DisownClaim(ctx context.Context, c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim) error
	// SetClaimsFinalizer adds (on) or removes api.FinalizerClaims on that very EtcdCluster,
	// as it was read (UID and resourceVersion preconditions), and leaves its other finalizers
	// as they are. done is false, with no error, when the cluster is gone or changed since it
	// was read: the next pass reads it again.
	SetClaimsFinalizer(ctx context.Context, c *api.EtcdCluster, on bool) (done bool, err error)
	// ApplyService applies the fields the operator decides of one of the cluster's Services
	// (server-side apply, field manager FieldManager); have is the Service as read, nil when
	// there is none yet. The caller has made sure a Service of that name is not someone
	// else's. A port someone changed under the name of one of the operator's is put back
	// first by a merge patch of the ports with a UID precondition (an apply would add the
	// operator's beside it, under the same name).
	ApplyService(ctx context.Context, c *api.EtcdCluster, want, have *corev1.Service) error
	// CreateSecret creates one of the cluster's Secrets (tls.go); created is false, with no
	// error, when one of that name exists already (the next pass reads it).
	CreateSecret(ctx context.Context, c *api.EtcdCluster, want *corev1.Secret) (created bool, err error)
	// UpdateSecret writes one of the cluster's Secrets as read and changed (its
	// resourceVersion is the precondition); a conflict is returned.
	UpdateSecret(ctx context.Context, c *api.EtcdCluster, want *corev1.Secret) error
	// DeleteService deletes that very Service; gone or replaced is done.
	DeleteService(ctx context.Context, c *api.EtcdCluster, svc *corev1.Service) error
	// ApplyBudget applies the cluster's PodDisruptionBudget, as ApplyService; have is the
	// budget as read, nil when there is none yet. A maxUnavailable someone set on it is
	// dropped first, by a merge patch with a UID precondition (a budget cannot carry both it
	// and minAvailable, and an apply cannot drop a field another manager owns).
	ApplyBudget(ctx context.Context, c *api.EtcdCluster, want, have *policyv1.PodDisruptionBudget) error
	// ApplyNetworkPolicy applies the cluster's NetworkPolicy, as ApplyService.
	ApplyNetworkPolicy(ctx context.Context, c *api.EtcdCluster, want *networkingv1.NetworkPolicy, create bool) error
	// DeleteNetworkPolicy deletes that very NetworkPolicy; gone or replaced is done.
	DeleteNetworkPolicy(ctx context.Context, c *api.EtcdCluster, have *networkingv1.NetworkPolicy) error
	// AnnotateCluster sets one annotation on that very EtcdCluster (a UID precondition).
	AnnotateCluster(ctx context.Context, c *api.EtcdCluster, key, value string) error
	// UnannotateCluster removes one annotation from that very EtcdCluster; a cluster gone is
	// done.
	UnannotateCluster(ctx context.Context, c *api.EtcdCluster, key string) error
	// PatchClusterStorage fills in spec.storage of that very EtcdCluster.
	PatchClusterStorage(ctx context.Context, c *api.EtcdCluster, storage *api.StorageSpec) error
	// CreateLease creates the cluster's installation Lease; created is false when a Lease of
	// that name exists already (another installation was first).
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) (created bool, err error)
	// UpdateLease writes the Lease as read and changed (its resourceVersion is the
	// precondition); updated is false when it changed meanwhile (another installation won).
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (updated bool, err error)
	// AddLearner adds member ordinal as a learner at peerURL; its peer URL listed already is
	// done.
	AddLearner(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, peerURL string) (Result, error)
	// MovePeerURL sets member id's peer URL to peerURL (etcd's member update); a member gone
	// is done, and so is one at peerURL already (the update is idempotent).
	MovePeerURL(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64, peerURL, why string) (Result, error)
	// Promote promotes learner id; promoted or removed already is done, not caught up yet is
	// a Result to retry.
	Promote(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64) (Result, error)
	// RemoveMember removes member id; gone already is done.
	RemoveMember(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64, why string) (Result, error)
	// MoveLeader asks the leader, reached at leader alone, to hand over to transferee; a
	// leader that no longer leads is a Result to plan again.
	MoveLeader(ctx context.Context, c *api.EtcdCluster, leader string, ordinal int, transferee uint64) (Result, error)
	// Downgrade validates and enables etcd's downgrade to target, or cancels the downgrade
	// in progress when target is empty; enabled already is done.
	Downgrade(ctx context.Context, c *api.EtcdCluster, voters []string, target string) (Result, error)
}

// FieldManager is the field manager of the operator's server-side applies.
const FieldManager = "etcd-operator"

// podImage is an in-place image change of a member pod's etcd container, with what the
// rollout reads back: the new template hash, the container it restarts and when.
type podImage struct {
	Image, Hash, RestartedFrom string
	At                         time.Time
}

// realActor is the actor of a running operator.
type realActor struct {
	kube    kubernetes.Interface
	etcdAPI versioned.Interface
	// clients are the etcd clients kept for each cluster (etcdclients.go).
	clients  *etcdClients
	recorder record.EventRecorder
	log      *logrus.Entry
	// initImage is the operator's own image, from which joining member pods copy member-init.
	initImage string
}

var _ actor = (*realActor)(nil)

func (m *realActor) logFor(c *api.EtcdCluster, name string, a plan.ActionKind) *logrus.Entry {
	return m.log.WithFields(logrus.Fields{"cluster": c.Namespace + "/" + c.Name, "member": name, "action": string(a)})
}

func (m *realActor) clusterLog(c *api.EtcdCluster) *logrus.Entry {
	return m.log.WithField("cluster", c.Namespace+"/"+c.Name)
}

func (m *realActor) event(c *api.EtcdCluster, eventType string, reason EventReason, format string, args ...any) {
	if m.recorder != nil {
		m.recorder.Eventf(c, eventType, string(reason), format, args...)
	}
}
