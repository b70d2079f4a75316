package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The actor's membership changes, sent to etcd.

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

// movePeer: the member is gone already. etcd refuses an update to a URL another member has
// (never one of the operator's: each member's URL is on its own host).
var movePeer = membershipChange{action: plan.ActionMovePeerURL,
	done: []error{etcdutil.ErrMemberNotFound}, notYet: []error{etcdutil.ErrUnhealthy}, retryIn: etcdRefusedRetry,
	doing: "moving the peer URL of member %s", logged: "moved peer URL",
	reason: EventPeerURLMoved}

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

func (m *realActor) AddLearner(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, peerURL string) (Result, error) {
	return m.change(ctx, c, voters, ordinal, addLearner, "", func(cli etcdutil.Client) (uint64, error) {
		added, err := cli.MemberAddAsLearner(ctx, peerURL)
		return added.ID, err
	})
}

func (m *realActor) Promote(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64) (Result, error) {
	return m.change(ctx, c, voters, ordinal, promote, "", func(cli etcdutil.Client) (uint64, error) {
		return id, cli.MemberPromote(ctx, id)
	})
}

func (m *realActor) RemoveMember(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64, why string) (Result, error) {
	return m.change(ctx, c, voters, ordinal, remove, why, func(cli etcdutil.Client) (uint64, error) {
		return id, cli.MemberRemove(ctx, id)
	})
}

func (m *realActor) MovePeerURL(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int, id uint64, peerURL, why string) (Result, error) {
	ch := movePeer
	ch.event = "Moved the peer URL of member %s (%s) to " + peerURL
	return m.change(ctx, c, voters, ordinal, ch, why, func(cli etcdutil.Client) (uint64, error) {
		return id, cli.MemberUpdate(ctx, id, []string{peerURL})
	})
}

// change sends a membership change to the voting members, through call, which returns the
// member's ID, and judges etcd's answer.
func (m *realActor) change(ctx context.Context, c *api.EtcdCluster, voters []string, ordinal int,
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
	if res.Changed && ch.action == plan.ActionAddLearner {
		res.MemberID = id
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

func (m *realActor) MoveLeader(ctx context.Context, c *api.EtcdCluster, leader string, ordinal int, transferee uint64) (Result, error) {
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

func (m *realActor) Downgrade(ctx context.Context, c *api.EtcdCluster, voters []string, target string) (Result, error) {
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
func (m *realActor) withClient(ctx context.Context, c *api.EtcdCluster, endpoints []string, f func(etcdutil.Client) error) error {
	if len(endpoints) == 0 {
		return errors.New("no voting member answered")
	}
	cli, err := m.clients.get(ctx, c, endpoints)
	if err != nil {
		return err
	}
	return f(cli)
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }
