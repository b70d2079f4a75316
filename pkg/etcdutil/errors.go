package etcdutil

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// errNotSupportedForLearner is what a learner answers to anything but Status.
var errNotSupportedForLearner = rpctypes.Error(rpctypes.ErrGRPCNotSupportedForLearner)

// sentinels maps etcd's errors, in the form clientv3 returns them, to the package's own.
var sentinels = []struct {
	etcd     error
	sentinel error
}{
	{rpctypes.ErrMemberLearnerNotReady, ErrLearnerNotReady},
	{rpctypes.ErrMemberNotFound, ErrMemberNotFound},
	{rpctypes.ErrTooManyLearners, ErrTooManyLearners},
	{rpctypes.ErrPeerURLExist, ErrPeerURLExists},
	// etcd derives an added member's ID from its peer URLs and the second it was added
	// (membership.computeMemberID): the same peer URL added again within that second is
	// refused as an existing ID before its peer URL is looked at.
	{rpctypes.ErrMemberExist, ErrPeerURLExists},
	{rpctypes.ErrUnhealthy, ErrUnhealthy},
	{rpctypes.ErrMemberNotEnoughStarted, ErrUnhealthy},
	{rpctypes.ErrMemberNotLearner, ErrMemberNotLearner},
	{rpctypes.ErrNotLeader, ErrNotLeader},
}

// etcdError is an error of etcd's that the package has a sentinel for. It reads as etcd's
// message and matches both the sentinel and etcd's own error with errors.Is.
type etcdError struct {
	sentinel error
	err      error
}

func (e *etcdError) Error() string   { return e.err.Error() }
func (e *etcdError) Unwrap() []error { return []error{e.sentinel, e.err} }

// mapErr gives etcd's error the package's sentinel, if it has one. It accepts the errors of
// clientv3 (rpctypes.EtcdError) as well as raw gRPC status errors, wrapped or not.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	converted := rpctypes.Error(err)
	for _, s := range sentinels {
		if errors.Is(converted, s.etcd) || errors.Is(err, s.etcd) || isGRPC(err, s.etcd) {
			return &etcdError{sentinel: s.sentinel, err: err}
		}
	}
	return err
}

// isGRPC reports whether err, or an error it wraps, is the gRPC status error behind etcdErr.
func isGRPC(err, etcdErr error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if converted := rpctypes.Error(e); converted != e && errors.Is(converted, etcdErr) {
			return true
		}
	}
	return false
}
