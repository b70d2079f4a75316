package etcdutil_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// movingMember is an embedded member as the move sees it: its host, the real ports that stand
// for the peer port and the move port (every member runs on loopback, on ports of its own),
// its peer certificate, and what its etcd listens on when (re)started.
type movingMember struct {
	host       string
	port, move int
	tls        transport.TLSInfo
	listen     peermove.Listen
}

// real is the URL on the member's host of endpoint e.
func (m *movingMember) real(e peermove.Endpoint) url.URL {
	port := m.port
	if e.Port == peermove.MovePort {
		port = m.move
	}
	return url.URL{Scheme: e.Scheme(), Host: net.JoinHostPort(m.host, strconv.Itoa(port))}
}

// endpoint is the endpoint a URL of the member's stands for.
func (m *movingMember) endpoint(t *testing.T, u string) peermove.Endpoint {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("parsing %s: %v", u, err)
	}
	e := peermove.Endpoint{TLS: parsed.Scheme == "https", Port: peermove.PeerPort}
	if parsed.Port() == strconv.Itoa(m.move) {
		e.Port = peermove.MovePort
	}
	return e
}

// peerMoveCluster is three embedded members on plaintext peers, each restarted on the
// listeners the planner's steps ask for, with a client that writes through them.
type peerMoveCluster struct {
	t       *testing.T
	members []*etcdtest.Member
	moving  map[string]*movingMember
	ca      pki.KeyPair
	raw     *clientv3.Client
	cli     etcdutil.Client
	puts    int
}

func startPeerMoveCluster(t *testing.T) *peerMoveCluster {
	c := &peerMoveCluster{t: t, moving: map[string]*movingMember{}, ca: newCA(t, "peer-ca")}
	names := []string{"demo-0", "demo-1", "demo-2"}
	for _, n := range names {
		c.moving[n] = &movingMember{}
	}
	c.members = etcdtest.StartNamedCluster(t, names, c.configure)
	var err error
	c.raw, err = clientv3.New(clientv3.Config{Endpoints: etcdtest.ClientURLs(c.members...), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { _ = c.raw.Close() })
	c.cli = newClient(t, etcdtest.ClientURLs(c.members...)...)
	return c
}

// configure starts a member on what its movingMember says: at its first start, where etcdtest
// put it, with a move port picked beside; later, on the listeners of the move's step, with its
// peer certificate when one of them takes TLS.
func (c *peerMoveCluster) configure(cfg *embed.Config) {
	m := c.moving[cfg.Name]
	if m.host == "" {
		m.host = cfg.ListenPeerUrls[0].Hostname()
		m.port, _ = strconv.Atoi(cfg.ListenPeerUrls[0].Port())
		m.move = freePort(c.t, m.host)
		m.tls = c.peerTLS(cfg.Name, m.host)
		m.listen = peermove.Listen{peermove.Final(false)}
		return
	}
	cfg.ListenPeerUrls = nil
	for _, e := range m.listen {
		cfg.ListenPeerUrls = append(cfg.ListenPeerUrls, m.real(e))
	}
	cfg.PeerTLSInfo = transport.TLSInfo{}
	if m.listen.TLS() {
		cfg.PeerTLSInfo = m.tls
	}
}

// peerTLS writes the member's peer certificate for its loopback address, as the operator
// issues one (server and client authentication; peers checked by CA, not by address).
func (c *peerMoveCluster) peerTLS(name, host string) transport.TLSInfo {
	l := issue(c.t, c.ca, pki.Request{CommonName: name, IPs: []net.IP{net.ParseIP(host)}, Usages: pki.ServerAuth | pki.ClientAuth})
	dir := c.t.TempDir()
	files := map[string][]byte{"peer.crt": l.CertPEM, "peer.key": l.KeyPEM, "ca.crt": c.ca.CertPEM}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
	return transport.TLSInfo{CertFile: filepath.Join(dir, "peer.crt"), KeyFile: filepath.Join(dir, "peer.key"),
		TrustedCAFile: filepath.Join(dir, "ca.crt"), ClientCertAuth: true, SkipClientSANVerify: true}
}

// step is where the move goes from where etcd's member list puts the URLs, and the member of
// each ID with the endpoint its URL is at.
func (c *peerMoveCluster) step(final peermove.Endpoint) (peermove.Step, map[uint64]peermove.Endpoint) {
	members, err := c.cli.MemberList(context.Background())
	if err != nil {
		c.t.Fatalf("MemberList: %v", err)
	}
	at := map[uint64]peermove.Endpoint{}
	var urls []peermove.Endpoint
	for _, m := range members {
		e := c.moving[m.Name].endpoint(c.t, m.PeerURLs[0])
		at[m.ID], urls = e, append(urls, e)
	}
	return peermove.Next(urls, final), at
}

// write puts n keys, each acknowledged.
func (c *peerMoveCluster) write(n int) {
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.raw.Put(ctx, fmt.Sprintf("key-%05d", c.puts), strconv.Itoa(c.puts))
		cancel()
		if err != nil {
			c.t.Fatalf("put %d: %v", c.puts, err)
		}
		c.puts++
	}
}

// moveTo takes the planner's steps toward final until Next says the move is done: the
// members not listening on the step's set restarted onto it one at a time (rule 8), then one
// URL per step moved where every member listens (rule 8b), writes between every two steps.
func (c *peerMoveCluster) moveTo(final peermove.Endpoint) (restarts, moves int) {
	for range 40 {
		step, at := c.step(final)
		if step.Problem != "" {
			c.t.Fatalf("move toward %v: %s", final, step.Problem)
		}
		if step.Done(final) && c.listening(step.Listen) {
			return restarts, moves
		}
		if m := c.notListening(step.Listen); m != nil {
			c.moving[m.Name].listen = step.Listen
			m.Stop()
			m.Restart(c.t, false)
			restarts++
		} else if id, ok := firstElsewhere(at, step.Dest); ok {
			mm := c.byID(id)
			u := c.moving[mm.Name].real(step.Dest)
			if err := c.cli.MemberUpdate(context.Background(), id, []string{u.String()}); err != nil {
				c.t.Fatalf("MemberUpdate(%s, %s): %v", mm.Name, u.String(), err)
			}
			moves++
		}
		c.write(20)
	}
	c.t.Fatalf("the move toward %v did not end", final)
	return restarts, moves
}

func (c *peerMoveCluster) listening(l peermove.Listen) bool { return c.notListening(l) == nil }

func (c *peerMoveCluster) notListening(l peermove.Listen) *etcdtest.Member {
	for _, m := range c.members {
		if !c.moving[m.Name].listen.Equal(l) {
			return m
		}
	}
	return nil
}

func (c *peerMoveCluster) byID(id uint64) *etcdtest.Member {
	for _, m := range c.members {
		if m.ID() == id {
			return m
		}
	}
	c.t.Fatalf("no member %x", id)
	return nil
}

func firstElsewhere(at map[uint64]peermove.Endpoint, dest peermove.Endpoint) (uint64, bool) {
	var out uint64
	for id, e := range at {
		if e != dest && (out == 0 || id < out) {
			out = id
		}
	}
	return out, out != 0
}

// TestPeerMoveAgainstEtcd moves three real members' peers onto TLS and back through the
// planner's steps (package peermove), restarting each member on its data and moving one URL
// at a time, with acknowledged writes between every two steps: every write succeeds, the
// members keep their IDs, the peer port refuses plaintext once on TLS, and every key is read
// back from every member at the end.
func TestPeerMoveAgainstEtcd(t *testing.T) {
	c := startPeerMoveCluster(t)
	ids := map[string]uint64{}
	for _, m := range c.members {
		ids[m.Name] = m.ID()
	}
	c.write(10)
	restarts, moves := c.moveTo(peermove.Final(true))
	// Each member restarted three times (onto the first hop's listeners, the second's, then
	// the final one alone) and its URL moved twice.
	if restarts != 9 || moves != 6 {
		t.Errorf("onto TLS: %d restarts, %d URL moves; want 9 and 6", restarts, moves)
	}
	for _, m := range c.members {
		peer := c.moving[m.Name].real(peermove.Final(false))
		if resp, err := http.Get(peer.String() + "/members"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("member %s: its peer port answers plaintext on TLS", m.Name)
			}
		}
	}
	if restarts, moves = c.moveTo(peermove.Final(false)); restarts != 9 || moves != 6 {
		t.Errorf("off TLS: %d restarts, %d URL moves; want 9 and 6", restarts, moves)
	}
	for _, m := range c.members {
		if m.ID() != ids[m.Name] {
			t.Errorf("member %s: ID %x, was %x", m.Name, m.ID(), ids[m.Name])
		}
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatalf("client of %s: %v", m.Name, err)
		}
		resp, err := one.Get(context.Background(), "key-", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		_ = one.Close()
		if err != nil || resp.Count != int64(c.puts) {
			t.Errorf("member %s: %v keys (%v), want %d", m.Name, resp, err, c.puts)
		}
	}
	t.Logf("%d puts acknowledged and read back", c.puts)
}

func freePort(t *testing.T, host string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("picking a port on %s: %v", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
