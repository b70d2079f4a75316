package etcdutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Defaults of the factory: short, so that a pass never waits long on a member that is gone.
const (
	DefaultDialTimeout = time.Second
	DefaultCallTimeout = 2 * time.Second
)

// NewFactory returns a Factory whose clients dial within dialTimeout and bound every call by
// callTimeout (zero picks the defaults).
func NewFactory(dialTimeout, callTimeout time.Duration) Factory {
	if dialTimeout <= 0 {
		dialTimeout = DefaultDialTimeout
	}
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	return &factory{dialTimeout: dialTimeout, callTimeout: callTimeout}
}

type factory struct {
	dialTimeout time.Duration
	callTimeout time.Duration
}

var _ Factory = (*factory)(nil)

// New opens a client over endpoints. The connection is made lazily, so New itself does not
// block on an unreachable member.
func (f *factory) New(endpoints []string) (Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no endpoints")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          f.dialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: f.dialTimeout,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %s: %w", strings.Join(endpoints, ","), err)
	}
	return &client{cli: cli, timeout: f.callTimeout, dialTimeout: f.dialTimeout}, nil
}

type client struct {
	cli         *clientv3.Client
	timeout     time.Duration
	dialTimeout time.Duration
}

var _ Client = (*client)(nil)

func (c *client) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func (c *client) MemberList(ctx context.Context) ([]Member, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing members: %w", mapErr(err))
	}
	out := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	return out, nil
}

func (c *client) MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.cli.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		return Member{}, fmt.Errorf("adding learner %s: %w", peerURL, mapErr(err))
	}
	m := resp.Member
	return Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}, nil
}

func (c *client) MemberPromote(ctx context.Context, id uint64) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.cli.MemberPromote(ctx, id); err != nil {
		return fmt.Errorf("promoting member %x: %w", id, mapErr(err))
	}
	return nil
}

func (c *client) MemberRemove(ctx context.Context, id uint64) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.cli.MemberRemove(ctx, id); err != nil {
		return fmt.Errorf("removing member %x: %w", id, mapErr(err))
	}
	return nil
}

// MoveLeader opens a connection to leaderEndpoint alone: etcd accepts MoveLeader only from
// the current leader.
func (c *client) MoveLeader(ctx context.Context, leaderEndpoint string, transferee uint64) error {
	lc, err := clientv3.New(clientv3.Config{
		Endpoints: []string{leaderEndpoint}, DialTimeout: c.dialTimeout, Logger: zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("connecting to leader %s: %w", leaderEndpoint, err)
	}
	defer lc.Close()
	// A transfer waits for the transferee to catch up; allow it an election's worth more.
	ctx, cancel := context.WithTimeout(ctx, 2*c.timeout)
	defer cancel()
	if _, err := lc.MoveLeader(ctx, transferee); err != nil {
		return fmt.Errorf("moving leadership to %x: %w", transferee, mapErr(err))
	}
	return nil
}

func (c *client) Status(ctx context.Context, endpoint string) (Status, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.cli.Status(ctx, endpoint)
	if err != nil {
		return Status{}, fmt.Errorf("status of %s: %w", endpoint, mapErr(err))
	}
	return Status{
		ID:               resp.Header.MemberId,
		Leader:           resp.Leader,
		RaftIndex:        resp.RaftIndex,
		RaftAppliedIndex: resp.RaftAppliedIndex,
		RaftTerm:         resp.RaftTerm,
		IsLearner:        resp.IsLearner,
		Version:          resp.Version,
		Errors:           resp.Errors,
	}, nil
}

func (c *client) Close() error { return c.cli.Close() }

// mapErr turns etcd's errors into the package's sentinels, keeping the original text.
func mapErr(err error) error {
	converted := rpctypes.Error(err)
	var sentinel error
	switch {
	case errors.Is(converted, rpctypes.ErrMemberLearnerNotReady), errors.Is(err, rpctypes.ErrGRPCLearnerNotReady):
		sentinel = ErrLearnerNotReady
	case errors.Is(converted, rpctypes.ErrMemberNotFound), errors.Is(err, rpctypes.ErrGRPCMemberNotFound):
		sentinel = ErrMemberNotFound
	case errors.Is(converted, rpctypes.ErrTooManyLearners), errors.Is(err, rpctypes.ErrGRPCTooManyLearners):
		sentinel = ErrTooManyLearners
	case errors.Is(converted, rpctypes.ErrPeerURLExist), errors.Is(err, rpctypes.ErrGRPCPeerURLExist),
		// The member ID derives from the peer URL: a retried add can meet either error.
		errors.Is(converted, rpctypes.ErrMemberExist), errors.Is(err, rpctypes.ErrGRPCMemberExist):
		sentinel = ErrPeerURLExists
	case errors.Is(converted, rpctypes.ErrUnhealthy), errors.Is(err, rpctypes.ErrGRPCUnhealthy):
		sentinel = ErrUnhealthy
	default:
		return err
	}
	return fmt.Errorf("%w: %v", sentinel, err)
}
