package etcdutil_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// pollTimeout bounds every wait for etcd to reach a state.
const pollTimeout = 20 * time.Second

// poll calls cond until it returns nil, failing the test if it has not by the deadline.
func poll(t *testing.T, desc string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", desc, pollTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newClient(t *testing.T, endpoints ...string) etcdutil.Client {
	t.Helper()
	cli, err := etcdutil.NewFactory(0, 0).New(endpoints, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatalf("opening client: %v", err)
	}
	t.Cleanup(func() {
		if err := cli.Close(); err != nil {
			t.Errorf("closing client: %v", err)
		}
	})
	return cli
}

func byPeerURL(t *testing.T, cli etcdutil.Client, peerURL string) (etcdutil.Member, bool) {
	t.Helper()
	members, err := cli.MemberList(context.Background())
	if err != nil {
		t.Fatalf("MemberList: %v", err)
	}
	for _, m := range members {
		if slices.Equal(m.PeerURLs, []string{peerURL}) {
			return m, true
		}
	}
	return etcdutil.Member{}, false
}

// leaderOf waits until every member reports the same leader and returns it.
func leaderOf(t *testing.T, cli etcdutil.Client, members []*etcdtest.Member) uint64 {
	t.Helper()
	var leader uint64
	poll(t, "members agree on a leader", func() error {
		leader = 0
		for _, m := range members {
			st, err := cli.Status(context.Background(), m.ClientURL)
			if err != nil {
				return err
			}
			if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
				return fmt.Errorf("%s follows %x, others %x", m.Name, st.Leader, leader)
			}
			leader = st.Leader
		}
		return nil
	})
	return leader
}

// TestLearnerAddedBeforeCrash: the operator added a learner and died before the member's
// pod started. The next operator finds the learner by its peer URL, is refused a duplicate,
// and promotes the member once it has started and caught up.
func TestLearnerAddedBeforeCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := etcdtest.StartCluster(t, 1)[0]
	learner := etcdtest.Reserve(t, "m1")

	added, err := newClient(t, seed.ClientURL).MemberAddAsLearner(ctx, learner.PeerURL)
	if err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
	addedIn := time.Now().Unix()
	if !added.IsLearner || added.ID == 0 || !slices.Equal(added.PeerURLs, []string{learner.PeerURL}) {
		t.Fatalf("added member = %+v, want a learner with peer URL %s", added, learner.PeerURL)
	}

	// The operator died here: a new one has only etcd's member list to go by.
	cli := newClient(t, seed.ClientURL)
	pending, ok := byPeerURL(t, cli, learner.PeerURL)
	if !ok {
		t.Fatalf("the added learner is not listed by its peer URL %s", learner.PeerURL)
	}
	if pending.ID != added.ID || pending.Name != "" || len(pending.ClientURLs) != 0 || !pending.IsLearner {
		t.Fatalf("unstarted learner listed as %+v, want ID %x, no name, no client URLs", pending, added.ID)
	}
	// etcd computes a new member's ID from its peer URL and the current second: a retry
	// within the second clashes on the ID, a later one on the peer URL. Both mean the same.
	if _, err := cli.MemberAddAsLearner(ctx, learner.PeerURL); !errors.Is(err, etcdutil.ErrPeerURLExists) {
		t.Fatalf("adding the same peer URL again = %v, want ErrPeerURLExists", err)
	}
	poll(t, "the clock passes the second of the add", func() error {
		if now := time.Now().Unix(); now <= addedIn {
			return fmt.Errorf("still second %d", now)
		}
		return nil
	})
	if _, err := cli.MemberAddAsLearner(ctx, learner.PeerURL); !errors.Is(err, etcdutil.ErrPeerURLExists) {
		t.Fatalf("adding the same peer URL a second later = %v, want ErrPeerURLExists", err)
	}
	if _, err := cli.MemberAddAsLearner(ctx, etcdtest.Reserve(t, "m2").PeerURL); !errors.Is(err, etcdutil.ErrTooManyLearners) {
		t.Fatalf("adding a second learner = %v, want ErrTooManyLearners", err)
	}
	if err := cli.MemberPromote(ctx, added.ID); !errors.Is(err, etcdutil.ErrLearnerNotReady) {
		t.Fatalf("promoting a learner that never started = %v, want ErrLearnerNotReady", err)
	}

	learner.Join(t, []*etcdtest.Member{seed})
	st, err := cli.Status(ctx, learner.ClientURL)
	if err != nil {
		t.Fatalf("Status of a learner: %v", err)
	}
	if st.ID != added.ID || !st.IsLearner || st.Leader != seed.ID() || st.Version == "" {
		t.Fatalf("learner's status = %+v, want a learner %x following %x", st, added.ID, seed.ID())
	}

	if err := cli.MoveLeader(ctx, learner.ClientURL, seed.ID()); !errors.Is(err, etcdutil.ErrNotLeader) {
		t.Errorf("MoveLeader sent to a learner = %v, want ErrNotLeader", err)
	}
	if err := cli.MoveLeader(ctx, seed.ClientURL, added.ID); err == nil || errors.Is(err, etcdutil.ErrNotLeader) {
		t.Errorf("MoveLeader to a learner = %v, want etcd's bad transferee error", err)
	}

	// etcd answers a member list only from a voting member; a client whose endpoints
	// include the learner still gets one, every time.
	if _, err := newClient(t, learner.ClientURL).MemberList(ctx); err == nil {
		t.Error("a learner answered a member list; etcd 3.6 refuses it")
	}
	mixed := newClient(t, learner.ClientURL, seed.ClientURL)
	for i := range 6 {
		if _, err := mixed.MemberList(ctx); err != nil {
			t.Fatalf("MemberList %d over a learner and a voter: %v", i, err)
		}
	}

	poll(t, "learner promoted", func() error {
		err := cli.MemberPromote(ctx, added.ID)
		if err != nil && !errors.Is(err, etcdutil.ErrLearnerNotReady) {
			t.Fatalf("MemberPromote: %v", err)
		}
		return err
	})
	if err := cli.MemberPromote(ctx, added.ID); !errors.Is(err, etcdutil.ErrMemberNotLearner) {
		t.Errorf("promoting the member again = %v, want ErrMemberNotLearner", err)
	}
	if err := cli.MemberPromote(ctx, seed.ID()); !errors.Is(err, etcdutil.ErrMemberNotLearner) {
		t.Errorf("promoting a voting member = %v, want ErrMemberNotLearner", err)
	}
	if err := cli.MemberPromote(ctx, 0x1234); !errors.Is(err, etcdutil.ErrMemberNotFound) {
		t.Errorf("promoting an unknown member = %v, want ErrMemberNotFound", err)
	}
	promoted, _ := byPeerURL(t, cli, learner.PeerURL)
	if promoted.IsLearner || promoted.Name != learner.Name || !slices.Equal(promoted.ClientURLs, []string{learner.ClientURL}) {
		t.Errorf("promoted member listed as %+v", promoted)
	}
}

// TestMoveLeader hands leadership to a chosen member, as the operator does before removing
// the leader.
func TestMoveLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	members := etcdtest.StartCluster(t, 3)
	cli := newClient(t, etcdtest.ClientURLs(members...)...)
	leader := leaderOf(t, cli, members)
	var leaderEP string
	var followers []*etcdtest.Member
	for _, m := range members {
		if m.ID() == leader {
			leaderEP = m.ClientURL
		} else {
			followers = append(followers, m)
		}
	}
	target := followers[0]

	if err := cli.MoveLeader(ctx, followers[1].ClientURL, target.ID()); !errors.Is(err, etcdutil.ErrNotLeader) {
		t.Fatalf("MoveLeader sent to a follower = %v, want ErrNotLeader", err)
	}
	if err := cli.MoveLeader(ctx, leaderEP, 0x1234); err == nil {
		t.Fatal("MoveLeader to a member that does not exist succeeded")
	}
	if err := cli.MoveLeader(ctx, leaderEP, target.ID()); err != nil {
		t.Fatalf("MoveLeader to %s: %v", target.Name, err)
	}
	if got := leaderOf(t, cli, members); got != target.ID() {
		t.Fatalf("leader after MoveLeader is %x, want %x (%s)", got, target.ID(), target.Name)
	}
	if err := cli.MoveLeader(ctx, leaderEP, target.ID()); !errors.Is(err, etcdutil.ErrNotLeader) {
		t.Errorf("MoveLeader retried through the former leader = %v, want ErrNotLeader", err)
	}
}

// TestRemoveMember removes a voting member and an unstarted learner, and repeats each
// removal as an operator restarted mid-step would.
func TestRemoveMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	started := time.Now()
	members := etcdtest.StartCluster(t, 3)
	cli := newClient(t, etcdtest.ClientURLs(members...)...)
	leader := leaderOf(t, cli, members)
	var gone *etcdtest.Member
	var stay []*etcdtest.Member
	for _, m := range members {
		if gone == nil && m.ID() != leader {
			gone = m
		} else {
			stay = append(stay, m)
		}
	}
	goneID := gone.ID()
	rest := newClient(t, etcdtest.ClientURLs(stay...)...)

	// etcd's strict reconfiguration check refuses to remove a voting member until the
	// members have been connected for 5 s; the connections are younger than the test.
	firstTry, sawUnhealthy := time.Now(), false
	poll(t, "voting member removed", func() error {
		err := rest.MemberRemove(ctx, goneID)
		switch {
		case errors.Is(err, etcdutil.ErrUnhealthy):
			sawUnhealthy = true
		case err != nil:
			t.Fatalf("MemberRemove: %v", err)
		}
		return err
	})
	if firstTry.Sub(started) < 3*time.Second && !sawUnhealthy {
		t.Errorf("removal %s after the cluster started was not refused as unhealthy", firstTry.Sub(started))
	}
	// The operator restarted before it saw the answer and removes the member again.
	if err := newClient(t, etcdtest.ClientURLs(stay...)...).MemberRemove(ctx, goneID); !errors.Is(err, etcdutil.ErrMemberNotFound) {
		t.Fatalf("removing the member again = %v, want ErrMemberNotFound", err)
	}
	if _, ok := byPeerURL(t, rest, gone.PeerURL); ok {
		t.Fatalf("removed member %s is still listed", gone.Name)
	}

	// A learner whose member never started is removed at once: etcd checks no quorum for it.
	var learner etcdutil.Member
	poll(t, "learner added", func() error {
		var err error
		learner, err = rest.MemberAddAsLearner(ctx, etcdtest.Reserve(t, "m3").PeerURL)
		if err != nil && !errors.Is(err, etcdutil.ErrUnhealthy) {
			t.Fatalf("MemberAddAsLearner: %v", err)
		}
		return err
	})
	if err := rest.MemberRemove(ctx, learner.ID); err != nil {
		t.Fatalf("removing an unstarted learner: %v", err)
	}
	if err := rest.MemberRemove(ctx, learner.ID); !errors.Is(err, etcdutil.ErrMemberNotFound) {
		t.Fatalf("removing the learner again = %v, want ErrMemberNotFound", err)
	}
	list, err := rest.MemberList(ctx)
	if err != nil {
		t.Fatalf("MemberList: %v", err)
	}
	if len(list) != len(stay) {
		t.Fatalf("members after the removals = %+v, want %d", list, len(stay))
	}
}

// TestUnreachableMemberIsBounded: calls to a member that is gone return within the call
// timeout, and sooner when the caller's context ends.
func TestUnreachableMemberIsBounded(t *testing.T) {
	t.Parallel()
	gone := etcdtest.Reserve(t, "gone")
	cli, err := etcdutil.NewFactory(200*time.Millisecond, 300*time.Millisecond).New([]string{gone.ClientURL}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatalf("opening client: %v", err)
	}
	defer cli.Close()
	for name, call := range map[string]func(context.Context) error{
		"Status": func(ctx context.Context) error {
			_, err := cli.Status(ctx, gone.ClientURL)
			return err
		},
		"MemberList": func(ctx context.Context) error {
			_, err := cli.MemberList(ctx)
			return err
		},
		"MemberRemove": func(ctx context.Context) error { return cli.MemberRemove(ctx, 1) },
		"MoveLeader":   func(ctx context.Context) error { return cli.MoveLeader(ctx, gone.ClientURL, 1) },
	} {
		start := time.Now()
		if err := call(context.Background()); err == nil {
			t.Errorf("%s of a member that is gone succeeded", name)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s of a member that is gone took %s; the call timeout is 300ms", name, d)
		}
	}

	slow, err := etcdutil.NewFactory(0, time.Minute).New([]string{gone.ClientURL}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatalf("opening client: %v", err)
	}
	defer slow.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := slow.MemberList(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("MemberList past the caller's deadline = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("MemberList took %s past the caller's 100ms deadline", d)
	}
}

// TestStatusOfAPodNotServingFailsFast: Status of an address that refuses connections, or
// that answers HTTP/2 but not etcd's gRPC (member-init answering probes while it waits),
// fails well before the call timeout: every pass asks every running member pod.
func TestStatusOfAPodNotServingFailsFast(t *testing.T) {
	t.Parallel()
	gone := etcdtest.Reserve(t, "gone")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: protocols, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not started", http.StatusServiceUnavailable)
	})}
	go srv.Serve(ln) //nolint:errcheck
	defer srv.Close()

	cli, err := etcdutil.NewFactory(0, 10*time.Second).New([]string{gone.ClientURL}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatalf("opening client: %v", err)
	}
	defer cli.Close()
	for name, ep := range map[string]string{"refused": gone.ClientURL, "not etcd": "http://" + ln.Addr().String()} {
		for i := 0; i < 3; i++ { // the first call and calls on a connection that failed before
			start := time.Now()
			if _, err := cli.Status(context.Background(), ep); err == nil {
				t.Fatalf("%s: Status succeeded", name)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s: Status took %s, the call timeout is 10s: it must not wait for the member", name, d)
			}
		}
	}
}
