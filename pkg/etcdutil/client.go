package etcdutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/credentials"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
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

// tlsConfig is the TLS configuration a client of conn dials with: nil for plaintext, else a
// copy of conn.TLS that checks certificates against conn.ServerName when it is set.
func tlsConfig(conn ConnConfig) *tls.Config {
	if conn.TLS == nil {
		return nil
	}
	cfg := conn.TLS.Clone()
	if conn.ServerName != "" {
		cfg.ServerName = conn.ServerName
		// gRPC sets the handshake's server name to each address's host (a pod IP), whatever
		// the configuration says, so the name is checked here instead: the chain against
		// RootCAs and the leaf against conn.ServerName, as crypto/tls itself would.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyServerName(conn.ServerName, cfg.RootCAs)
	}
	return cfg
}

// verifyServerName checks a server's certificate chain against roots (nil: the system's) and
// its leaf against name, whatever name the handshake was started with.
func verifyServerName(name string, roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			DNSName: name, Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
}

// open makes an etcd client that logs nothing, with the factory's dial options: it retries
// connecting quickly (gRPC's default backoff grows to two minutes, which would leave a
// long-lived client, member-init's, blind long after a member came back) and reads without a
// buffer of its own.
func (f *factory) open(endpoints []string, conn ConnConfig) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("creating etcd client: no endpoints")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: f.dialTimeout,
		TLS:         tlsConfig(conn),
		Logger:      zap.NewNop(),
		DialOptions: f.dialOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %s: %w", strings.Join(endpoints, ","), err)
	}
	return cli, nil
}

// dialMember makes a connection to the member at endpoint alone, with the client's settings
// (scheme, TLS, reconnect backoff). It connects on its first call, not here.
func (f *factory) dialMember(endpoint string, conn ConnConfig) (*grpc.ClientConn, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not a URL with a host", endpoint)
	}
	creds := insecure.NewCredentials()
	if u.Scheme == "https" {
		creds = credentials.NewTransportCredential(tlsConfig(conn))
	}
	cc, err := grpc.NewClient("passthrough:///"+u.Host, append(f.dialOptions(), grpc.WithTransportCredentials(creds))...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	return cc, nil
}

// dialOptions are those of every connection the factory's clients make, balanced (open) or
// to one member (dialMember), in the operator, member-init and the backup agent alike.
//
// The connections carry small requests and answers only (a Client has no bulk call; the
// snapshot stream has a client of its own, OpenSnapshot), and the operator keeps several per
// cluster, idle between passes, for as long as it runs. gRPC gives each connection a read
// buffer that a connection over TLS holds from its handshake to its close, a large part of
// what a kept connection costs. Without it, gRPC reads each frame straight from the
// connection: over TLS, from the buffer crypto/tls keeps anyway; in plaintext, at the cost
// of a read call per frame header and payload, nothing at this traffic. The write buffer
// stays gRPC's: this gRPC shares it between connections and takes it back once written, so
// an idle connection holds none, and without it every frame would be written (and, over
// TLS, sealed in a record) on its own.
func (f *factory) dialOptions() []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithConnectParams(f.connectParams()), grpc.WithReadBufferSize(0)}
	if f.dial != nil {
		opts = append(opts, grpc.WithContextDialer(f.dial))
	}
	return opts
}

// connectParams retry connecting quickly: gRPC's default backoff grows to two minutes.
func (f *factory) connectParams() grpc.ConnectParams {
	return grpc.ConnectParams{
		Backoff: backoff.Config{
			BaseDelay:  100 * time.Millisecond,
			Multiplier: 1.6,
			Jitter:     0.2,
			MaxDelay:   f.callTimeout,
		},
		MinConnectTimeout: f.dialTimeout,
	}
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
