package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/k8sutil"
)

// EventReason is the reason of an Event the operator records.
type EventReason string

// Event reasons: one Event per action that changed the world.
const (
	EventPodCreated      EventReason = "PodCreated"
	EventPodDeleted      EventReason = "PodDeleted"
	EventMemberAdded     EventReason = "MemberAdded"
	EventMemberPromoted  EventReason = "MemberPromoted"
	EventMemberRemoved   EventReason = "MemberRemoved"
	EventLeaderMoved     EventReason = "LeaderMoved"
	EventServiceCreated  EventReason = "ServiceCreated"
	EventChangeRefused   EventReason = "ChangeRefused"
	EventClusterHealthy  EventReason = "ClusterAvailable"
	EventClusterDegraded EventReason = "ClusterDegraded"
)

// etcdRefusedRetry is how soon a change etcd refused as unsafe for now is tried again; etcd
// counts a member as connected only after it has been for a few seconds.
const etcdRefusedRetry = 250 * time.Millisecond

// act takes one action. Every action is idempotent: an action that already happened (the
// pod exists, the member is already there or already gone) counts as done. It returns how
// soon to look again when the action could not complete yet.
func (r *Reconciler) act(ctx context.Context, c *api.EtcdCluster, o *observation, a Action, why string) (time.Duration, error) {
	member := k8sutil.MemberName(c.Name, a.Ordinal)
	log := r.log(c).WithFields(map[string]any{"member": member, "action": string(a.Kind)})
	switch a.Kind {
	case ActionCreatePod:
		pod := k8sutil.MemberPod(c, k8sutil.MemberPodParams{
			Ordinal:        a.Ordinal,
			ClusterState:   a.ClusterState,
			InitialCluster: a.InitialCluster,
			InitImage:      r.deps.MemberInitImage,
			DataVolume:     k8sutil.DataVolume(&c.Spec),
			Version:        memberVersion(c),
		})
		_, err := r.deps.Kube.CoreV1().Pods(c.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("creating pod %s: %w", member, err)
		}
		log.WithField("clusterState", a.ClusterState).Info("created member pod")
		r.event(c, corev1.EventTypeNormal, EventPodCreated, "Created pod %s (%s)", member, why)

	case ActionDeletePod:
		p := o.pods[a.Ordinal]
		if p == nil {
			return 0, nil
		}
		// The UID precondition keeps a newer pod of the same name safe.
		err := r.deps.Kube.CoreV1().Pods(c.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("deleting pod %s: %w", member, err)
		}
		log.Info("deleted member pod")
		r.event(c, corev1.EventTypeNormal, EventPodDeleted, "Deleted pod %s (%s)", member, why)

	case ActionAddLearner:
		var id uint64
		applied, retry, err := r.changeMembership(ctx, o, 0, func(cli etcdutil.Client) error {
			m, err := cli.MemberAddAsLearner(ctx, k8sutil.PeerURL(c.Name, c.Namespace, a.Ordinal))
			id = m.ID
			return err
		}, []error{etcdutil.ErrPeerURLExists}, etcdRefusedRetry, etcdutil.ErrUnhealthy)
		if err != nil {
			return 0, fmt.Errorf("adding member %s as learner: %w", member, err)
		}
		if applied {
			log.WithField("id", hexID(id)).Info("added learner")
			r.event(c, corev1.EventTypeNormal, EventMemberAdded, "Added member %s (%s) as a learner", member, hexID(id))
		}
		return retry, nil

	case ActionPromote:
		applied, retry, err := r.changeMembership(ctx, o, 0, func(cli etcdutil.Client) error {
			return cli.MemberPromote(ctx, a.MemberID)
		}, []error{etcdutil.ErrMemberNotFound, etcdutil.ErrMemberNotLearner}, whileWaiting, etcdutil.ErrLearnerNotReady, etcdutil.ErrUnhealthy)
		if err != nil {
			return 0, fmt.Errorf("promoting member %s: %w", member, err)
		}
		if applied {
			log.WithField("id", hexID(a.MemberID)).Info("promoted learner")
			r.event(c, corev1.EventTypeNormal, EventMemberPromoted, "Promoted member %s (%s) to a voting member", member, hexID(a.MemberID))
		}
		return retry, nil

	case ActionRemoveMember:
		applied, retry, err := r.changeMembership(ctx, o, a.MemberID, func(cli etcdutil.Client) error {
			return cli.MemberRemove(ctx, a.MemberID)
		}, []error{etcdutil.ErrMemberNotFound}, etcdRefusedRetry, etcdutil.ErrUnhealthy)
		if err != nil {
			return 0, fmt.Errorf("removing member %s: %w", member, err)
		}
		if applied {
			log.WithField("id", hexID(a.MemberID)).Info("removed member")
			r.event(c, corev1.EventTypeNormal, EventMemberRemoved, "Removed member %s (%s): %s", member, hexID(a.MemberID), why)
		}
		return retry, nil

	case ActionMoveLeader:
		leaderPod := o.pods[a.Ordinal]
		if leaderPod == nil || leaderPod.Status.PodIP == "" {
			return whileWaiting, nil
		}
		ep := k8sutil.PodClientURL(leaderPod.Status.PodIP)
		cli, err := r.deps.Etcd.New([]string{ep})
		if err != nil {
			return 0, fmt.Errorf("opening etcd client: %w", err)
		}
		defer cli.Close()
		err = cli.MoveLeader(ctx, ep, a.Transferee)
		if errors.Is(err, etcdutil.ErrNotLeader) {
			// Leadership moved on its own since this pass looked: plan again.
			return afterAction, nil
		}
		if err != nil {
			return 0, fmt.Errorf("moving leadership from %s to %s: %w", member, hexID(a.Transferee), err)
		}
		log.WithField("to", hexID(a.Transferee)).Info("moved leadership")
		r.event(c, corev1.EventTypeNormal, EventLeaderMoved, "Moved leadership from %s to member %s before removing it", member, hexID(a.Transferee))
	}
	return 0, nil
}

// memberVersion is the etcd version new members run. Changing the version of a running
// cluster is not supported yet: until it is, new members keep the version the cluster runs,
// so that a changed spec.version never mixes versions unannounced; status says so.
func memberVersion(c *api.EtcdCluster) string {
	if running := c.Status.CurrentVersion; running != "" && running != k8sutil.NormalizeVersion(c.Spec.Version) {
		return running
	}
	return c.Spec.Version
}

// changeMembership sends one membership change to the voting members. An error matching one
// of alreadyDone means an earlier pass (perhaps of an operator that died since) made it; errors
// matching notYet mean etcd refuses it for now (a learner still catching up, or etcd's strict
// reconfiguration check, which wants every member connected for a few seconds): neither is a
// failure. applied is true when this call made the change; retry is when to look again.
func (r *Reconciler) changeMembership(ctx context.Context, o *observation, exclude uint64, change func(etcdutil.Client) error,
	alreadyDone []error, retryIn time.Duration, notYet ...error) (applied bool, retry time.Duration, err error) {
	err = r.withVoters(ctx, o, exclude, change)
	if err == nil {
		return true, 0, nil
	}
	for _, e := range alreadyDone {
		if errors.Is(err, e) {
			return false, 0, nil
		}
	}
	for _, e := range notYet {
		if errors.Is(err, e) {
			r.deps.Log.WithError(err).Debug("etcd refused the change for now")
			return false, retryIn, nil
		}
	}
	return false, 0, err
}

// withVoters runs f with a client over the voting members that answered this pass, the
// leader first, leaving out the member the action removes.
func (r *Reconciler) withVoters(ctx context.Context, o *observation, exclude uint64, f func(etcdutil.Client) error) error {
	eps := o.voterEndpoints(exclude)
	if len(eps) == 0 {
		return errors.New("no voting member answered")
	}
	cli, err := r.deps.Etcd.New(eps)
	if err != nil {
		return fmt.Errorf("opening etcd client: %w", err)
	}
	defer cli.Close()
	return f(cli)
}

func (r *Reconciler) event(c *api.EtcdCluster, eventType string, reason EventReason, format string, args ...any) {
	if r.deps.Recorder != nil {
		r.deps.Recorder.Eventf(c, eventType, string(reason), format, args...)
	}
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }
