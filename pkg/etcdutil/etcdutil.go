// Package etcdutil is the operator's narrow view of an etcd cluster: membership changes and
// per-member status, each call bounded by a short timeout so a reconcile pass never blocks on
// an unreachable member.
package etcdutil

import (
	"context"
	"crypto/tls"
	"errors"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// Sentinel errors callers check with errors.Is.
var (
	// ErrLearnerNotReady: the learner has not caught up with the leader yet; try again later.
	ErrLearnerNotReady = errors.New("learner is not in sync with the leader")
	// ErrMemberNotFound: no member has the given ID (it was already removed).
	ErrMemberNotFound = errors.New("member not found")
	// ErrTooManyLearners: the cluster already has a learner; etcd allows one at a time.
	ErrTooManyLearners = errors.New("too many learner members in cluster")
	// ErrPeerURLExists: a member with this peer URL is already in the member list.
	ErrPeerURLExists = errors.New("peer URL already exists")
	// ErrUnhealthy: the cluster refused a membership change because it would be unsafe: too
	// few members started, or the member asked not connected to enough peers for long enough
	// (etcd's strict reconfiguration check). Try again later.
	ErrUnhealthy = errors.New("cluster refused the change as unhealthy")
	// ErrMemberNotLearner: the member to promote is a voting member already.
	ErrMemberNotLearner = errors.New("member is not a learner")
	// ErrForeignCluster: the member asked belongs to another etcd cluster than the one the
	// change is meant for (its cluster ID differs); the change was not sent.
	ErrForeignCluster = errors.New("member belongs to another etcd cluster")
	// ErrNotLeader: the member asked to hand over leadership is not the leader.
	ErrNotLeader = errors.New("member is not the leader")
)

// ClusterState is the value of etcd's --initial-cluster-state flag (etcdfacts.ClusterState).
type ClusterState = etcdfacts.ClusterState

// The states a member's etcd starts in (see etcdfacts).
const (
	ClusterStateNew      = etcdfacts.ClusterStateNew
	ClusterStateExisting = etcdfacts.ClusterStateExisting
)

// Member is one entry of etcd's member list.
type Member struct {
	// ID is etcd's member ID.
	ID uint64
	// Name is empty until the member has started and published its name.
	Name string
	// PeerURLs are the URLs other members dial; the operator sets exactly one.
	PeerURLs []string
	// ClientURLs are empty until the member has started.
	ClientURLs []string
	// IsLearner is true for a non-voting learner.
	IsLearner bool
}

// Status is what one member reports of itself (etcdfacts.Status).
type Status = etcdfacts.Status

// AlarmType is an alarm a member raises (etcdfacts.AlarmType).
type AlarmType = etcdfacts.AlarmType

// The alarms etcd raises (see etcdfacts).
const (
	AlarmNoSpace = etcdfacts.AlarmNoSpace
	AlarmCorrupt = etcdfacts.AlarmCorrupt
)

// Alarm is one alarm raised in the cluster.
type Alarm struct {
	// MemberID is the member that raised it.
	MemberID uint64
	Type     AlarmType
}

// Client talks to one etcd cluster through the endpoints it was opened with.
// Every method honours ctx and returns within the factory's per-call timeout.
type Client interface {
	// MemberList returns the cluster's members, as seen by any voting endpoint that answers,
	// with a linearizable read: a member added through any other member is listed. A learner
	// among the endpoints is passed over (etcd refuses member lists from learners).
	MemberList(ctx context.Context) ([]Member, error)
	// MemberAddAsLearner adds a non-voting member with the given peer URL and returns it.
	// It returns ErrPeerURLExists when a member with that peer URL already exists, and
	// ErrTooManyLearners when another learner is still pending.
	MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error)
	// MemberPromote turns a learner into a voting member. It returns ErrLearnerNotReady while
	// the learner lags behind the leader (or has not started), ErrMemberNotFound if there is
	// no such member, and ErrMemberNotLearner if it is a voting member already.
	MemberPromote(ctx context.Context, id uint64) error
	// MemberUpdate sets the peer URLs of the member id, a learner's too, started or not: a
	// member keeps its ID and data, and its peers dial it at the new URLs. It returns
	// ErrMemberNotFound if there is no such member, and ErrPeerURLExists when another member
	// has one of the URLs.
	MemberUpdate(ctx context.Context, id uint64, peerURLs []string) error
	// MemberRemove removes a member. It returns ErrMemberNotFound if it was already removed,
	// and ErrUnhealthy when etcd refuses because the removal would cost quorum.
	MemberRemove(ctx context.Context, id uint64) error
	// MoveLeader asks the current leader, reached at leaderEndpoint alone, to hand leadership
	// to the voting member transferee. It returns when the transfer is done or failed, and
	// ErrNotLeader when the member at leaderEndpoint does not lead (any more).
	MoveLeader(ctx context.Context, leaderEndpoint string, transferee uint64) error
	// Status asks the member at endpoint (any client URL, not only the client's endpoints)
	// for its status. Learners answer too.
	Status(ctx context.Context, endpoint string) (Status, error)
	// AlarmList returns the alarms raised in the cluster (any member's), none when there
	// are none. Like the member list, it needs a leader.
	AlarmList(ctx context.Context) ([]Alarm, error)
	Downgrader
	// Close releases the client's connections.
	Close() error
}

// ConnConfig is how the operator connects to the members of one cluster.
type ConnConfig struct {
	// TLS is the client side of TLS to the members' client URLs; nil connects in plaintext.
	// The Factory does not modify it.
	TLS *tls.Config
	// ServerName is the name the members' certificates are checked against, in place of the
	// address dialed (a pod IP); empty keeps TLS.ServerName. Unused without TLS.
	ServerName string
}

// Factory opens clients. The operator dials members at their pod IPs, never through DNS.
type Factory interface {
	// New opens a client over the given client URLs (e.g. http://10.244.0.12:2379) that
	// connects to them as conn says; a zero ConnConfig connects in plaintext.
	New(endpoints []string, conn ConnConfig) (Client, error)
}
