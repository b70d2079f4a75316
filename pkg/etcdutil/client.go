package etcdutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// Defaults of the factory: short, so that a pass never waits long on a member that is gone.
const (
	// DefaultDialTimeout is what one attempt to connect to an endpoint is given before it
	// is retried (gRPC's minimum connect timeout; later attempts get their backoff delay).
	DefaultDialTimeout = time.Second
	// DefaultCallTimeout bounds every call of a Client, retries and connecting included.
	DefaultCallTimeout = 2 * time.Second
)

// NewFactory returns a Factory whose clients give an attempt to connect to an endpoint
// dialTimeout and bound every call by callTimeout (zero or less picks the defaults).
func NewFactory(dialTimeout, callTimeout time.Duration) Factory {
	return newFactory(dialTimeout, callTimeout)
}

func newFactory(dialTimeout, callTimeout time.Duration) *factory {
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
	// dial, when set, makes the factory's connections in place of gRPC's own dialer: tests
	// watch what gRPC does with them.
	dial func(ctx context.Context, addr string) (net.Conn, error)
}

var _ Factory = (*factory)(nil)

// New opens a client over endpoints. It connects to nothing yet: the connections its calls
// need are made on first use and kept until Close (see client), so New does not block on an
// unreachable member, and calls wait for a connection up to their timeout.
func (f *factory) New(endpoints []string, conn ConnConfig) (Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("creating etcd client: no endpoints")
	}
	return &client{factory: f, conn: conn, endpoints: slices.Clone(endpoints), members: map[string]*grpc.ClientConn{}}, nil
}

// client is a Client over endpoints. Its calls to the cluster go through one clientv3.Client,
// which balances them over the endpoints; Status goes to one member alone, over a connection
// of that member's own. Both are opened on first use and kept, so a client kept from one
// pass to the next dials nothing again while its members answer: a connection that failed is
// dropped and dialed again on the next Status, and every connection is closed by Close.
type client struct {
	factory *factory
	// conn is how the client connects, for the clients it opens to one member (MoveLeader).
	conn      ConnConfig
	endpoints []string

	mu sync.Mutex
	// cli balances calls over the endpoints; nil until the first call that needs it.
	cli *clientv3.Client
	// members are the connections of Status, by endpoint.
	members map[string]*grpc.ClientConn
	closed  bool
}

var _ Client = (*client)(nil)

// errClosed: a call on a client after Close.
var errClosed = errors.New("etcd client is closed")

// balanced is the clientv3.Client over the client's endpoints, opened on first use.
func (c *client) balanced() (*clientv3.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if c.cli == nil {
		cli, err := c.factory.open(c.endpoints, c.conn)
		if err != nil {
			return nil, err
		}
		c.cli = cli
	}
	return c.cli, nil
}

// call runs one request within the call timeout. A learner refuses every request but
// Status; clientv3's retry interceptor then sends the request to the next endpoint, when
// there is one, so a learner among the endpoints costs a round trip, not the call.
func (c *client) call(ctx context.Context, do func(context.Context, *clientv3.Client) error) error {
	cli, err := c.balanced()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.factory.callTimeout)
	defer cancel()
	return mapErr(do(ctx, cli))
}

// MemberList uses clientv3's default, a linearizable member list: the answering member
// confirms with the leader that it has applied every membership change made so far.
func (c *client) MemberList(ctx context.Context) ([]Member, error) {
	var resp *clientv3.MemberListResponse
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) (err error) {
		resp, err = cli.MemberList(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing members: %w", err)
	}
	out := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	return out, nil
}

func (c *client) MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error) {
	var resp *clientv3.MemberAddResponse
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) (err error) {
		resp, err = cli.MemberAddAsLearner(ctx, []string{peerURL})
		return err
	})
	if err != nil {
		return Member{}, fmt.Errorf("adding learner %s: %w", peerURL, err)
	}
	m := resp.Member
	return Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}, nil
}

func (c *client) MemberPromote(ctx context.Context, id uint64) error {
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) error {
		_, err := cli.MemberPromote(ctx, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("promoting member %x: %w", id, err)
	}
	return nil
}

func (c *client) MemberUpdate(ctx context.Context, id uint64, peerURLs []string) error {
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) error {
		_, err := cli.MemberUpdate(ctx, id, peerURLs)
		return err
	})
	if err != nil {
		return fmt.Errorf("updating peer URLs of member %x to %s: %w", id, strings.Join(peerURLs, ","), err)
	}
	return nil
}

func (c *client) MemberRemove(ctx context.Context, id uint64) error {
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) error {
		_, err := cli.MemberRemove(ctx, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("removing member %x: %w", id, err)
	}
	return nil
}

// MoveLeader connects to leaderEndpoint alone: etcd takes a leader transfer only from the
// leader, and the client's balancer could send it to any of its endpoints.
func (c *client) MoveLeader(ctx context.Context, leaderEndpoint string, transferee uint64) error {
	lc, err := c.factory.open([]string{leaderEndpoint}, c.conn)
	if err != nil {
		return fmt.Errorf("moving leadership to %x: %w", transferee, err)
	}
	defer lc.Close()
	ctx, cancel := context.WithTimeout(ctx, c.factory.callTimeout)
	defer cancel()
	if _, err := lc.MoveLeader(ctx, transferee); err != nil {
		mapped := mapErr(err)
		if errors.Is(err, errNotSupportedForLearner) {
			// A learner refuses the request unread: it never leads.
			mapped = &etcdError{sentinel: ErrNotLeader, err: err}
		}
		return fmt.Errorf("moving leadership from %s to %x: %w", leaderEndpoint, transferee, mapped)
	}
	return nil
}

// Status asks endpoint alone, whichever endpoints the client balances over, over the
// connection the client keeps to it, and does not wait for a member that is not serving: a
// refused connection, or an answer that is not etcd's (a member pod whose etcd has not
// started: member-init answers probes on the client port), fails it at once instead of at
// the call timeout. The operator asks every running member pod for its status each pass, and
// one waiting pod would otherwise hold each pass back by the whole timeout.
func (c *client) Status(ctx context.Context, endpoint string) (Status, error) {
	conn, err := c.memberConn(endpoint)
	if err != nil {
		return Status{}, fmt.Errorf("getting status of %s: %w", endpoint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.factory.callTimeout)
	defer cancel()
	resp, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(false))
	if err != nil {
		if lostConnection(err) {
			c.forgetMemberConn(endpoint, conn)
		}
		return Status{}, fmt.Errorf("getting status of %s: %w", endpoint, mapErr(err))
	}
	st := Status{
		ID:               resp.Header.MemberId,
		ClusterID:        resp.Header.ClusterId,
		Leader:           resp.Leader,
		RaftIndex:        resp.RaftIndex,
		RaftAppliedIndex: resp.RaftAppliedIndex,
		RaftTerm:         resp.RaftTerm,
		IsLearner:        resp.IsLearner,
		Version:          resp.Version,
		Errors:           resp.Errors,
		StorageVersion:   resp.StorageVersion,
		DBSize:           resp.DbSize,
		DBSizeInUse:      resp.DbSizeInUse,
		Revision:         resp.Header.Revision,
	}
	if d := resp.DowngradeInfo; d != nil && d.Enabled {
		st.DowngradeTarget = d.TargetVersion
	}
	return st, nil
}

func (c *client) AlarmList(ctx context.Context) ([]Alarm, error) {
	var resp *clientv3.AlarmResponse
	err := c.call(ctx, func(ctx context.Context, cli *clientv3.Client) (err error) {
		resp, err = cli.AlarmList(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing alarms: %w", err)
	}
	var out []Alarm
	for _, a := range resp.Alarms {
		if a.Alarm != pb.AlarmType_NONE {
			out = append(out, Alarm{MemberID: a.MemberID, Type: AlarmType(a.Alarm.String())})
		}
	}
	return out, nil
}

// memberConn is the client's connection to endpoint alone, dialed on first use. One that
// failed (its member was down when last asked) is dialed anew: a fresh connection tries the
// member at once, where the failed one would wait out its reconnect backoff and answer
// "unavailable" meanwhile, and a member back in the meantime would be missed for a pass.
func (c *client) memberConn(endpoint string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if conn, ok := c.members[endpoint]; ok {
		if s := conn.GetState(); s != connectivity.TransientFailure && s != connectivity.Shutdown {
			return conn, nil
		}
		_ = conn.Close()
		delete(c.members, endpoint)
	}
	conn, err := c.factory.dialMember(endpoint, c.conn)
	if err != nil {
		return nil, err
	}
	c.members[endpoint] = conn
	return conn, nil
}

// forgetMemberConn closes conn, the connection to endpoint a call just lost, so that the next
// call dials anew. gRPC notices a connection that died under a call (a member that went away
// after it was ready) on its own, but not at once: a call made meanwhile would go over it and
// fail the same way, and a member back by then would be missed for a pass.
func (c *client) forgetMemberConn(endpoint string, conn *grpc.ClientConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.members[endpoint] == conn {
		_ = conn.Close()
		delete(c.members, endpoint)
	}
}

// lostConnection reports whether err is a call's connection failing (gRPC's Unavailable) rather
// than an answer of etcd's.
func lostConnection(err error) bool {
	var etcdErr rpctypes.EtcdError
	return status.Code(err) == codes.Unavailable && !errors.As(rpctypes.Error(err), &etcdErr)
}

// Close closes every connection the client opened; its calls fail from then on.
func (c *client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for ep, conn := range c.members {
		if err := conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the connection to %s: %w", ep, err))
		}
	}
	c.members = nil
	if c.cli != nil {
		if err := c.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing etcd client: %w", err)
	}
	return nil
}
