package etcdutil

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Sentinel errors of etcd's downgrade API.
var (
	// ErrDowngradeInvalid: etcd refuses to downgrade to the target (not exactly one minor
	// below the cluster version, or a member cannot run it).
	ErrDowngradeInvalid = errors.New("invalid downgrade target version")
	// ErrDowngradeInProgress: a downgrade is already enabled.
	ErrDowngradeInProgress = errors.New("downgrade already in progress")
)

// downgradeSentinels maps etcd's downgrade errors to the package's.
var downgradeSentinels = []struct {
	etcd     error
	sentinel error
}{
	{rpctypes.ErrInvalidDowngradeTargetVersion, ErrDowngradeInvalid},
	{rpctypes.ErrDowngradeInProcess, ErrDowngradeInProgress},
}

// Downgrader drives etcd's downgrade API (etcd 3.6 and later): a cluster is downgraded one
// minor version at a time by enabling the downgrade, which lowers the cluster version to the
// target, then replacing the members' binaries; cancelling before the members are replaced
// restores the cluster version.
type Downgrader interface {
	// DowngradeValidate asks whether the cluster can downgrade to target (MAJOR.MINOR.PATCH;
	// etcd looks at MAJOR.MINOR). It returns ErrDowngradeInvalid when it cannot.
	DowngradeValidate(ctx context.Context, target string) error
	// DowngradeEnable starts the downgrade to target. It returns ErrDowngradeInvalid when the
	// target is not allowed and ErrDowngradeInProgress when a downgrade is already enabled.
	DowngradeEnable(ctx context.Context, target string) error
	// DowngradeCancel stops the downgrade in progress, if any: with none, it is done already
	// (a cancel retried after the operator restarted must not fail).
	DowngradeCancel(ctx context.Context) error
}

var _ Downgrader = (*client)(nil)

func (c *client) DowngradeValidate(ctx context.Context, target string) error {
	return c.downgrade(ctx, clientv3.DowngradeValidate, target, "validating a downgrade to %s")
}

func (c *client) DowngradeEnable(ctx context.Context, target string) error {
	return c.downgrade(ctx, clientv3.DowngradeEnable, target, "enabling a downgrade to %s")
}

func (c *client) DowngradeCancel(ctx context.Context) error {
	return c.downgrade(ctx, clientv3.DowngradeCancel, "", "cancelling the downgrade%s")
}

func (c *client) downgrade(ctx context.Context, action clientv3.DowngradeAction, target, verb string) error {
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) error {
		_, err := cli.Downgrade(ctx, action, target)
		return err
	})
	if err == nil || (action == clientv3.DowngradeCancel && isDowngradeErr(err, rpctypes.ErrNoInflightDowngrade)) {
		return nil
	}
	for _, s := range downgradeSentinels {
		if isDowngradeErr(err, s.etcd) {
			err = &etcdError{sentinel: s.sentinel, err: err}
			break
		}
	}
	return fmt.Errorf(verb+": %w", target, err)
}

// isDowngradeErr: err is etcd's error etcdErr, in any of the forms clientv3 returns it.
func isDowngradeErr(err, etcdErr error) bool {
	return errors.Is(rpctypes.Error(err), etcdErr) || errors.Is(err, etcdErr) || isGRPC(err, etcdErr)
}
