package etcdutil

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMapErr(t *testing.T) {
	sentinelsOfPackage := []error{ErrLearnerNotReady, ErrMemberNotFound, ErrTooManyLearners, ErrPeerURLExists,
		ErrUnhealthy, ErrMemberNotLearner, ErrNotLeader}
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: no sentinel
	}{
		{"learner not ready as clientv3 returns it", rpctypes.ErrMemberLearnerNotReady, ErrLearnerNotReady},
		{"learner not ready as gRPC status", rpctypes.ErrGRPCLearnerNotReady, ErrLearnerNotReady},
		{"member not found, wrapped status", fmt.Errorf("calling: %w", rpctypes.ErrGRPCMemberNotFound), ErrMemberNotFound},
		{"member not found, wrapped clientv3 error", fmt.Errorf("calling: %w", rpctypes.ErrMemberNotFound), ErrMemberNotFound},
		{"too many learners", rpctypes.ErrTooManyLearners, ErrTooManyLearners},
		{"peer URL exists", rpctypes.ErrGRPCPeerURLExist, ErrPeerURLExists},
		{"unhealthy", rpctypes.ErrUnhealthy, ErrUnhealthy},
		// etcd's server maps this one to a non-status error, which reaches the client as
		// codes.Unknown with etcd's message.
		{"not enough started members, as sent on the wire",
			status.Error(codes.Unknown, "etcdserver: re-configuration failed due to not enough started members"), ErrUnhealthy},
		{"not a learner", rpctypes.ErrMemberNotLearner, ErrMemberNotLearner},
		{"not leader", rpctypes.ErrGRPCNotLeader, ErrNotLeader},
		// The same peer URL added twice within a second clashes on the member ID first.
		{"member ID exists", rpctypes.ErrMemberExist, ErrPeerURLExists},
		{"bad leader transferee", rpctypes.ErrBadLeaderTransferee, nil},
		{"deadline", context.DeadlineExceeded, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mapErr(tc.err)
			if !errors.Is(got, tc.err) {
				t.Errorf("mapErr(%v) = %v, which no longer matches the original error", tc.err, got)
			}
			if got.Error() != tc.err.Error() {
				t.Errorf("mapErr changed the message from %q to %q", tc.err.Error(), got.Error())
			}
			for _, s := range sentinelsOfPackage {
				if is := errors.Is(fmt.Errorf("removing member 1: %w", got), s); is != (s == tc.want) {
					t.Errorf("errors.Is(mapErr(%v), %v) = %v", tc.err, s, is)
				}
			}
		})
	}
	if mapErr(nil) != nil {
		t.Error("mapErr(nil) is not nil")
	}
}

// Only a call whose connection failed drops the member's connection: an answer of etcd's, even
// one gRPC codes Unavailable ("no leader"), came over a connection that works.
func TestLostConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"write on a dead connection", status.Error(codes.Unavailable, "write tcp 127.0.0.1:1->127.0.0.1:2: write: broken pipe"), true},
		{"connection refused", fmt.Errorf("getting status: %w", status.Error(codes.Unavailable, "connection error: connection refused")), true},
		{"etcd has no leader", rpctypes.ErrGRPCNoLeader, false},
		{"etcd's leader changed", rpctypes.ErrGRPCLeaderChanged, false},
		{"timed out", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), false},
		{"not gRPC's", errors.New("closed"), false},
	} {
		if got := lostConnection(tc.err); got != tc.want {
			t.Errorf("%s: lostConnection(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
