package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

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
	EventBudgetCreated    EventReason = "DisruptionBudgetCreated"
	EventBudgetConflict   EventReason = "DisruptionBudgetConflict"
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

// Result is what a member-control call did.
type Result struct {
	// Changed is true when this call changed the world (and recorded an Event); false when
	// the change had already been made, or could not be made yet.
	Changed bool
	// RetryIn, when set, is how soon to look again: the change could not be made yet, and
	// Refused is etcd's answer that said so.
	RetryIn time.Duration
	Refused error
}

// memberControl makes the changes the planner decides on: pods through the API server,
// membership through etcd. Every call is idempotent: a change that already happened (the pod
// exists, the member is already there or already gone) is done, not a failure. Each logs and
// records an Event when it changed something. voters are the client URLs of the voting
// members to send a membership change to, the leader first.
type memberControl interface {
	// CreatePod creates the member's claim first when the cluster keeps data on claims (a
	// claim that exists is used as it is), then the pod.
	CreatePod(ctx context.Context, c *api.EtcdCluster, t member.Template, why string) (Result, error)
	DeletePod(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, why string) (Result, error)
	// DeleteClaim deletes that very claim (a newer claim of the same name is left alone).
	DeleteClaim(ctx context.Context, c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim, why string) (Result, error)
	AddLearner(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int) (Result, error)
	Promote(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64) (Result, error)
	RemoveMember(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64, why string) (Result, error)
	// MoveLeader asks the leader, reached at leader alone, to hand over to transferee.
	MoveLeader(ctx context.Context, c *api.EtcdCluster, leader string, ordinal int, transferee uint64) (Result, error)
	// Downgrade validates and enables etcd's downgrade to target, or cancels the downgrade
	// in progress when target is empty.
	Downgrade(ctx context.Context, c *api.EtcdCluster, voters []string, target string) (Result, error)
}

// etcdRefusedRetry is how soon a change etcd refused as unsafe for now is tried again; etcd
// counts a member as connected only after it has been for a few seconds.
const etcdRefusedRetry = 250 * time.Millisecond

// membershipChange is one kind of membership change: what etcd's answers to it mean, and
// what is logged and recorded once a call made it.
type membershipChange struct {
	action plan.ActionKind
	// done: an earlier pass (perhaps of an operator that died since) made the change.
	done []error
	// notYet: etcd refuses the change for now; it is tried again after retryIn.
	notYet  []error
	retryIn time.Duration
	// doing names the change in an error; logged and event (with the member's name and ID)
	// say it was made.
	doing, logged string
	reason        EventReason
	event         string
}

// The membership changes and their error policies.
var (
	// addLearner: the peer URL is listed already. etcd's strict reconfiguration check refuses
	// an add until the leader has been connected to enough members for a while.
	addLearner = membershipChange{action: plan.ActionAddLearner,
		done: []error{etcdutil.ErrPeerURLExists}, notYet: []error{etcdutil.ErrUnhealthy}, retryIn: etcdRefusedRetry,
		doing: "adding member %s as learner", logged: "added learner",
		reason: EventMemberAdded, event: "Added member %s (%s) as a learner"}
	// promote: the learner was promoted, or removed, already; it may still be catching up.
	promote = membershipChange{action: plan.ActionPromote,
		done:   []error{etcdutil.ErrMemberNotFound, etcdutil.ErrMemberNotLearner},
		notYet: []error{etcdutil.ErrLearnerNotReady, etcdutil.ErrUnhealthy}, retryIn: whileWaiting,
		doing: "promoting member %s", logged: "promoted learner",
		reason: EventMemberPromoted, event: "Promoted member %s (%s) to a voting member"}
	// remove: the member is gone already; etcd refuses a removal that would leave too few
	// started members.
	remove = membershipChange{action: plan.ActionRemoveMember,
		done: []error{etcdutil.ErrMemberNotFound}, notYet: []error{etcdutil.ErrUnhealthy}, retryIn: etcdRefusedRetry,
		doing: "removing member %s", logged: "removed member",
		reason: EventMemberRemoved, event: "Removed member %s (%s)"}
)

// judge turns etcd's answer into a Result, or the error that is a real failure.
func (ch membershipChange) judge(err error) (Result, error) {
	if err == nil {
		return Result{Changed: true}, nil
	}
	for _, e := range ch.done {
		if errors.Is(err, e) {
			return Result{}, nil
		}
	}
	for _, e := range ch.notYet {
		if errors.Is(err, e) {
			return Result{RetryIn: ch.retryIn, Refused: err}, nil
		}
	}
	return Result{}, err
}

// realMemberControl is the memberControl of a running operator.
type realMemberControl struct {
	kube     kubernetes.Interface
	etcd     etcdutil.Factory
	recorder record.EventRecorder
	log      *logrus.Entry
	// initImage is the operator's own image, from which joining member pods copy member-init.
	initImage string
}

var _ memberControl = (*realMemberControl)(nil)

func (m *realMemberControl) CreatePod(ctx context.Context, c *api.EtcdCluster, t member.Template, why string) (Result, error) {
	name := member.Name(c.Name, t.Ordinal)
	claimed := false
	if member.HasClaims(&c.Spec) {
		pvc := member.Claim(c, t.Ordinal)
		_, err := m.kube.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Used as it is only when it is the cluster's (a retained claim included).
			have, err := m.kube.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
			if err != nil {
				return Result{}, fmt.Errorf("getting claim %s: %w", pvc.Name, err)
			}
			if !claimIsOurs(c, have) {
				return Result{}, fmt.Errorf("creating pod %s: %w", name, &foreignError{obj: foreignObject(plan.ForeignClaim, have, t.Ordinal)})
			}
		case err != nil:
			return Result{}, fmt.Errorf("creating claim %s: %w", pvc.Name, err)
		default:
			claimed = true
			m.logFor(c, name, plan.ActionCreatePod).WithField("claim", pvc.Name).Info("created member claim")
			m.event(c, corev1.EventTypeNormal, EventClaimCreated, "Created claim %s for member %s", pvc.Name, name)
		}
	}
	_, err := m.kube.CoreV1().Pods(c.Namespace).Create(ctx, member.Pod(c, t, m.initImage), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Made by an earlier pass, or someone else's pod of the member's name: the latter
		// is never taken as created.
		have, err := m.kube.CoreV1().Pods(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return Result{}, fmt.Errorf("getting pod %s: %w", name, err)
		}
		if !metav1.IsControlledBy(have, c) {
			return Result{}, fmt.Errorf("creating pod %s: %w", name, &foreignError{obj: foreignObject(plan.ForeignPod, have, t.Ordinal)})
		}
		return Result{Changed: claimed}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("creating pod %s: %w", name, err)
	}
	m.logFor(c, name, plan.ActionCreatePod).WithField("clusterState", t.ClusterState).Info("created member pod")
	m.event(c, corev1.EventTypeNormal, EventPodCreated, "Created pod %s (%s)", name, why)
	return Result{Changed: true}, nil
}

func (m *realMemberControl) DeletePod(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, why string) (Result, error) {
	return m.deleteObject(c, "pod", pod.Name, plan.ActionDeletePod, EventPodDeleted, why,
		m.kube.CoreV1().Pods(c.Namespace).Delete(ctx, pod.Name, uidPrecondition(pod.UID)))
}

func (m *realMemberControl) DeleteClaim(ctx context.Context, c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim, why string) (Result, error) {
	return m.deleteObject(c, "claim", pvc.Name, plan.ActionDeleteClaim, EventClaimDeleted, why,
		m.kube.CoreV1().PersistentVolumeClaims(c.Namespace).Delete(ctx, pvc.Name, uidPrecondition(pvc.UID)))
}

// uidPrecondition deletes only the object with that UID: a newer one of the same name is
// left alone.
func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// deleteObject judges the answer err to deleting the named object: gone already, or replaced
// by a newer one (the UID precondition failed), is done; a deletion is logged and recorded.
func (m *realMemberControl) deleteObject(c *api.EtcdCluster, kind, name string, a plan.ActionKind, reason EventReason, why string, err error) (Result, error) {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("deleting %s %s: %w", kind, name, err)
	}
	m.logFor(c, name, a).Infof("deleted member %s", kind)
	m.event(c, corev1.EventTypeNormal, reason, "Deleted %s %s (%s)", kind, name, why)
	return Result{Changed: true}, nil
}

func (m *realMemberControl) AddLearner(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int) (Result, error) {
	return m.change(ctx, c, voters, ordinal, addLearner, "", func(cli etcdutil.Client) (uint64, error) {
		added, err := cli.MemberAddAsLearner(ctx, member.PeerURL(c.Name, c.Namespace, ordinal))
		return added.ID, err
	})
}

func (m *realMemberControl) Promote(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64) (Result, error) {
	return m.change(ctx, c, voters, ordinal, promote, "", func(cli etcdutil.Client) (uint64, error) {
		return id, cli.MemberPromote(ctx, id)
	})
}

func (m *realMemberControl) RemoveMember(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64, why string) (Result, error) {
	return m.change(ctx, c, voters, ordinal, remove, why, func(cli etcdutil.Client) (uint64, error) {
		return id, cli.MemberRemove(ctx, id)
	})
}

// change sends a membership change to the voting members, through call, which returns the
// member's ID, and judges etcd's answer.
func (m *realMemberControl) change(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int,
	ch membershipChange, why string, call func(etcdutil.Client) (uint64, error)) (Result, error) {
	name := member.Name(c.Name, ordinal)
	voters, err := m.sameCluster(ctx, c, voters)
	if err != nil {
		return Result{}, fmt.Errorf(ch.doing+": %w", name, err)
	}
	var id uint64
	res, err := ch.judge(m.withClient(ctx, c, voters, func(cli etcdutil.Client) (err error) {
		id, err = call(cli)
		return err
	}))
	if err != nil {
		return res, fmt.Errorf(ch.doing+": %w", name, err)
	}
	if res.Changed {
		m.logFor(c, name, ch.action).WithField("id", hexID(id)).Info(ch.logged)
		msg := fmt.Sprintf(ch.event, name, hexID(id))
		if why != "" {
			msg += ": " + why
		}
		m.event(c, corev1.EventTypeNormal, ch.reason, "%s", msg)
	}
	return res, nil
}

func (m *realMemberControl) MoveLeader(ctx context.Context, c *api.EtcdCluster, leader string, ordinal int, transferee uint64) (Result, error) {
	name := member.Name(c.Name, ordinal)
	if _, err := m.sameCluster(ctx, c, []string{leader}); err != nil {
		return Result{}, fmt.Errorf("moving leadership from %s to %s: %w", name, hexID(transferee), err)
	}
	err := m.withClient(ctx, c, []string{leader}, func(cli etcdutil.Client) error {
		return cli.MoveLeader(ctx, leader, transferee)
	})
	if errors.Is(err, etcdutil.ErrNotLeader) {
		// Leadership moved on its own since the pass looked: plan again.
		return Result{RetryIn: afterAction, Refused: err}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("moving leadership from %s to %s: %w", name, hexID(transferee), err)
	}
	m.logFor(c, name, plan.ActionMoveLeader).WithField("to", hexID(transferee)).Info("moved leadership")
	m.event(c, corev1.EventTypeNormal, EventLeaderMoved, "Moved leadership from %s to member %s before removing it", name, hexID(transferee))
	return Result{Changed: true}, nil
}

// downgradeRefusedRetry is how soon a downgrade etcd refused to enable is asked again.
const downgradeRefusedRetry = 30 * time.Second

func (m *realMemberControl) Downgrade(ctx context.Context, c *api.EtcdCluster, voters []string, target string) (Result, error) {
	doing := "cancelling etcd's downgrade"
	if target != "" {
		doing = "enabling etcd's downgrade to " + target
	}
	voters, err := m.sameCluster(ctx, c, voters)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", doing, err)
	}
	done := false
	err = m.withClient(ctx, c, voters, func(cli etcdutil.Client) error {
		if target == "" {
			return cli.DowngradeCancel(ctx)
		}
		err := cli.DowngradeValidate(ctx, target)
		if err == nil {
			err = cli.DowngradeEnable(ctx, target)
		}
		if errors.Is(err, etcdutil.ErrDowngradeInvalid) || errors.Is(err, etcdutil.ErrDowngradeInProgress) {
			// Enabled already (by a pass of an operator that died since)? Once it is, etcd
			// has lowered the cluster version, and calls the same target invalid.
			if st, serr := cli.Status(ctx, voters[0]); serr == nil && st.DowngradeTarget != "" {
				done = true
				return nil
			}
		}
		return err
	})
	switch {
	case done:
		return Result{}, nil
	case errors.Is(err, etcdutil.ErrDowngradeInvalid) || errors.Is(err, etcdutil.ErrDowngradeInProgress):
		m.event(c, corev1.EventTypeWarning, EventDowngradeRefused, "etcd refused to downgrade to %s: %v", target, err)
		return Result{RetryIn: downgradeRefusedRetry, Refused: err}, nil
	case err != nil:
		return Result{}, fmt.Errorf("%s: %w", doing, err)
	}
	m.log.WithFields(logrus.Fields{"cluster": c.Namespace + "/" + c.Name, "target": target}).Info(doing)
	if target == "" {
		m.event(c, corev1.EventTypeNormal, EventDowngradeCancelled, "Cancelled etcd's downgrade: spec.version is %s", c.Spec.Version)
	} else {
		m.event(c, corev1.EventTypeNormal, EventDowngradeEnabled, "Enabled etcd's downgrade to %s: the members are restarted on it one at a time", target)
	}
	return Result{Changed: true}, nil
}

// withClient runs f with a client over endpoints, members of c.
func (m *realMemberControl) withClient(ctx context.Context, c *api.EtcdCluster, endpoints []string, f func(etcdutil.Client) error) error {
	if len(endpoints) == 0 {
		return errors.New("no voting member answered")
	}
	cli, err := m.etcd.New(endpoints, etcdConn(c))
	if err != nil {
		return fmt.Errorf("opening etcd client: %w", err)
	}
	defer cli.Close()
	return f(cli)
}

func (m *realMemberControl) logFor(c *api.EtcdCluster, name string, a plan.ActionKind) *logrus.Entry {
	return m.log.WithFields(logrus.Fields{"cluster": c.Namespace + "/" + c.Name, "member": name, "action": string(a)})
}

func (m *realMemberControl) event(c *api.EtcdCluster, eventType string, reason EventReason, format string, args ...any) {
	if m.recorder != nil {
		m.recorder.Eventf(c, eventType, string(reason), format, args...)
	}
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }
