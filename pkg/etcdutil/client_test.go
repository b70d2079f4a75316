package etcdutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

func waitFor(t *testing.T, desc string, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s: %v", timeout, desc, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func find(ms []etcdutil.Member, peerURL string) (etcdutil.Member, bool) {
	for _, m := range ms {
		if len(m.PeerURLs) == 1 && m.PeerURLs[0] == peerURL {
			return m, true
		}
	}
	return etcdutil.Member{}, false
}

// TestMembershipLifecycle walks the operator's membership steps against real etcd: add a
// learner, find it again after a "crash" by its peer URL, start it, promote it, move
// leadership to it, remove it, and repeat each step to see that a retry is harmless.
func TestMembershipLifecycle(t *testing.T) {
	ctx := context.Background()
	seed := etcdtest.StartSeed(t)
	f := etcdutil.NewFactory(0, 0)
	cli, err := f.New([]string{seed.ClientURL})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	second := etcdtest.Ports(t, "m1")
	added, err := cli.MemberAddAsLearner(ctx, second.PeerURL)
	if err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
	if !added.IsLearner {
		t.Fatalf("added member is not a learner: %+v", added)
	}

	// The operator died here. A new pass finds the learner by its peer URL: it has no name
	// until it starts, and adding it again is refused rather than duplicated.
	members, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending, ok := find(members, second.PeerURL)
	if !ok || pending.Name != "" || !pending.IsLearner || pending.ID != added.ID {
		t.Fatalf("pending learner = %+v (found %v), want the unstarted learner %x", pending, ok, added.ID)
	}
	if _, err := cli.MemberAddAsLearner(ctx, second.PeerURL); !errors.Is(err, etcdutil.ErrPeerURLExists) {
		t.Fatalf("adding the same peer URL again = %v, want ErrPeerURLExists", err)
	}
	if _, err := cli.MemberAddAsLearner(ctx, etcdtest.Ports(t, "m2").PeerURL); !errors.Is(err, etcdutil.ErrTooManyLearners) {
		t.Fatalf("a second learner = %v, want ErrTooManyLearners", err)
	}
	if err := cli.MemberPromote(ctx, added.ID); !errors.Is(err, etcdutil.ErrLearnerNotReady) {
		t.Fatalf("promoting a learner that never started = %v, want ErrLearnerNotReady", err)
	}
	if err := cli.MemberPromote(ctx, seed.ID()); err == nil {
		t.Fatal("promoting a voting member succeeded")
	}

	second.Join(t, []*etcdtest.Member{seed, second})
	st, err := cli.Status(ctx, second.ClientURL)
	if err != nil {
		t.Fatalf("Status of a learner: %v", err)
	}
	if !st.IsLearner || st.ID != added.ID || st.Version == "" {
		t.Fatalf("learner status = %+v", st)
	}
	waitFor(t, "learner promotion", 20*time.Second, func() error { return cli.MemberPromote(ctx, added.ID) })
	if err := cli.MemberPromote(ctx, added.ID); err == nil {
		t.Fatal("promoting twice succeeded; the retry must be told the member is no learner")
	}

	// Leadership moves to the member that will stay; the leader is the only one that may ask.
	seedSt, err := cli.Status(ctx, seed.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	leaderEP, target := seed.ClientURL, added.ID
	if seedSt.Leader != seed.ID() {
		leaderEP, target = second.ClientURL, seed.ID()
	}
	if err := cli.MoveLeader(ctx, leaderEP, target); err != nil {
		t.Fatalf("MoveLeader: %v", err)
	}
	waitFor(t, "new leader", 10*time.Second, func() error {
		st, err := cli.Status(ctx, seed.ClientURL)
		if err != nil {
			return err
		}
		if st.Leader != target {
			return errors.New("leader not moved yet")
		}
		return nil
	})

	// Remove the member that no longer leads; a retried removal is told it is gone.
	removed := added.ID
	if target == added.ID {
		removed = seed.ID()
	}
	survivor := seed.ClientURL
	if removed == seed.ID() {
		survivor = second.ClientURL
	}
	scli, err := f.New([]string{survivor})
	if err != nil {
		t.Fatal(err)
	}
	defer scli.Close()
	// etcd refuses a removal until the members left have been connected for a while (its
	// strict reconfiguration check): the caller is told so and tries again.
	waitFor(t, "removal accepted", 20*time.Second, func() error {
		err := scli.MemberRemove(ctx, removed)
		if err != nil && !errors.Is(err, etcdutil.ErrUnhealthy) {
			t.Fatalf("MemberRemove: %v", err)
		}
		return err
	})
	if err := scli.MemberRemove(ctx, removed); !errors.Is(err, etcdutil.ErrMemberNotFound) {
		t.Fatalf("removing twice = %v, want ErrMemberNotFound", err)
	}
	members, err = scli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members[0].ID == removed {
		t.Fatalf("members after removal = %+v", members)
	}
}

func TestStatusOfUnreachableMemberIsBounded(t *testing.T) {
	f := etcdutil.NewFactory(200*time.Millisecond, 300*time.Millisecond)
	gone := etcdtest.Ports(t, "gone")
	cli, err := f.New([]string{gone.ClientURL})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	start := time.Now()
	if _, err := cli.Status(context.Background(), gone.ClientURL); err == nil {
		t.Fatal("status of a member that does not exist succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("status of an unreachable member took %s; the call timeout is 300ms", d)
	}
}
