package etcdutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Maintainer is a Client with etcd's maintenance calls. The operator makes none of them on its
// own: defragmenting blocks a member while it runs, compacting drops history that is the
// user's to drop, and an alarm is the user's to clear once its cause is gone. kubectl etcd
// makes them on the user's word.
type Maintainer interface {
	Client
	// Defragment rebuilds the backend of the member at endpoint alone (any client URL, not
	// only the client's endpoints), giving its free pages back to the file system. The member
	// serves no reads or writes while it runs. It is bounded by ctx only: a large database
	// takes as long as it takes.
	Defragment(ctx context.Context, endpoint string) error
	// Compact drops the history of every key before the cluster's current revision (read
	// with a linearizable request) and returns that revision. With physical it returns once
	// every member has removed the history from its backend, bounded by ctx only. A revision
	// compacted already is not an error.
	Compact(ctx context.Context, physical bool) (revision int64, err error)
	// AlarmDisarm clears the alarm a. The cluster accepts writes again once no alarm that
	// blocks them is left; NOSPACE is raised again at the next write while the member's
	// backend is still at its quota.
	AlarmDisarm(ctx context.Context, a Alarm) error
}

var _ Maintainer = (*client)(nil)

// NewMaintainer opens a Maintainer over endpoints, with a factory's timeouts (NewFactory) and
// connecting as conn says (Factory.New).
func NewMaintainer(dialTimeout, callTimeout time.Duration, endpoints []string, conn ConnConfig) (Maintainer, error) {
	cli, err := newFactory(dialTimeout, callTimeout).New(endpoints, conn)
	if err != nil {
		return nil, err
	}
	return cli.(*client), nil
}

func (c *client) Defragment(ctx context.Context, endpoint string) error {
	cli, err := c.balanced()
	if err != nil {
		return fmt.Errorf("defragmenting %s: %w", endpoint, err)
	}
	if _, err := cli.Defragment(ctx, endpoint); err != nil {
		return fmt.Errorf("defragmenting %s: %w", endpoint, mapErr(err))
	}
	return nil
}

func (c *client) Compact(ctx context.Context, physical bool) (int64, error) {
	var rev int64
	var cli *clientv3.Client
	err := c.call(ctx, func(ctx context.Context, balanced *clientv3.Client) error {
		cli = balanced
		// Any key will do: the header carries the store's revision, and counting reads no value.
		resp, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reading the current revision: %w", err)
	}
	var opts []clientv3.CompactOption
	if physical {
		opts = append(opts, clientv3.WithCompactPhysical())
	}
	_, err = cli.Compact(ctx, rev, opts...)
	if err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrCompacted) {
		return 0, fmt.Errorf("compacting to revision %d: %w", rev, mapErr(err))
	}
	return rev, nil
}

func (c *client) AlarmDisarm(ctx context.Context, a Alarm) error {
	t, ok := pb.AlarmType_value[string(a.Type)]
	// NONE with member 0 would disarm every alarm of the cluster (clientv3's meaning of a
	// zero AlarmMember), which is not what was asked.
	if !ok || pb.AlarmType(t) == pb.AlarmType_NONE || a.MemberID == 0 {
		return fmt.Errorf("disarming alarm %q of member %x: not an alarm etcd raises", a.Type, a.MemberID)
	}
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) error {
		_, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType(t)})
		return err
	})
	if err != nil {
		return fmt.Errorf("disarming %s of member %x: %w", a.Type, a.MemberID, err)
	}
	return nil
}
