// Package etcdtest runs real etcd members inside the test process
// (go.etcd.io/etcd/server/v3/embed), so that membership code is tested against etcd itself
// rather than against a fake of it.
//
// Each member listens on a loopback address of its own (127.x.y.z), on ports the kernel
// found free there. Outgoing connections take their source ports on 127.0.0.1, so between
// reserving a member's ports and starting it nothing else on the machine takes them, not
// even for a member that is started long after it was added to the cluster.
package etcdtest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// ReadyTimeout bounds how long a member may take to join its cluster and serve clients.
const ReadyTimeout = 30 * time.Second

// Member is one embedded etcd member. Reserve makes one to start later with Join;
// StartCluster makes and starts several. A member runs until Stop or the end of the test.
type Member struct {
	// Name is the member's --name.
	Name string
	// PeerURL and ClientURL are the member's only peer and client URL.
	PeerURL   string
	ClientURL string
	// Dir is the member's data directory; it outlives Stop until the end of the test.
	Dir string
	// Etcd is the running member; nil until it is started.
	Etcd *embed.Etcd

	token     string
	tls       TLS
	configure func(*embed.Config)
	group     *group
	stopOnce  sync.Once
	stopped   atomic.Bool
}

// TLS is what a member serves its URLs with: etcd's own description of the files it reads
// (--peer-cert-file, --trusted-ca-file and the like). A side whose CertFile is empty serves
// plaintext, as a member without TLS does on both.
type TLS struct {
	Peer   transport.TLSInfo
	Client transport.TLSInfo
}

// group is the members started as one cluster, new or joined, for stopping them together.
type group struct {
	mu      sync.Mutex
	members []*Member
}

func (g *group) add(m *Member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m.group = g
	g.members = append(g.members, m)
}

// stop stops the members, the leader first each time. A leader that stops hands leadership
// to a peer and waits for it up to etcd's request timeout (7 s): its peers must still run.
func (g *group) stop() {
	g.mu.Lock()
	members := slices.Clone(g.members)
	g.mu.Unlock()
	for {
		var next *Member
		for _, m := range members {
			if m.Etcd != nil && !m.stopped.Load() && (next == nil || m.isLeader()) {
				next = m
			}
		}
		if next == nil {
			return
		}
		next.Stop()
	}
}

func (m *Member) isLeader() bool {
	return m.Etcd.Server.Leader() == m.Etcd.Server.MemberID()
}

// Reserve picks addresses and a data directory for a member without starting it: a test
// adds the member to a cluster by its PeerURL first and starts it afterwards with Join.
func Reserve(t testing.TB, name string) *Member {
	t.Helper()
	return reserve(t, name, TLS{})
}

// ReserveWith is Reserve for a member whose configuration configure changes before it starts
// (its --max-learners, say).
func ReserveWith(t testing.TB, name string, configure func(*embed.Config)) *Member {
	t.Helper()
	m := reserve(t, name, TLS{})
	m.configure = configure
	return m
}

func reserve(t testing.TB, name string, tls TLS) *Member {
	t.Helper()
	addrs := freeAddrs(t, loopbackHost(t), 2)
	return &Member{
		Name:      name,
		PeerURL:   scheme(tls.Peer) + "://" + addrs[0],
		ClientURL: scheme(tls.Client) + "://" + addrs[1],
		Dir:       t.TempDir(),
		tls:       tls,
	}
}

func scheme(info transport.TLSInfo) string {
	if info.Empty() {
		return "http"
	}
	return "https"
}

// StartCluster starts a new cluster of n voting members and returns once every member has
// joined it and serves clients.
func StartCluster(t testing.TB, n int) []*Member {
	t.Helper()
	return StartClusterWith(t, n, nil)
}

// StartClusterWith is StartCluster with configure applied to each member's configuration
// before it starts (a backend quota, say); configure may be nil.
func StartClusterWith(t testing.TB, n int, configure func(*embed.Config)) []*Member {
	t.Helper()
	return StartTLSCluster(t, n, nil, configure)
}

// StartTLSCluster is StartClusterWith for members that serve TLS: tlsOf gives each member's
// by its name (a member's certificates name it), and its URLs are https where it has TLS.
// A nil tlsOf starts members without TLS. A restarted member reads the files again.
func StartTLSCluster(t testing.TB, n int, tlsOf func(name string) TLS, configure func(*embed.Config)) []*Member {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("m%d", i)
	}
	return startCluster(t, names, tlsOf, configure)
}

// StartNamedCluster is StartClusterWith for members of the given names (a cluster's member
// names, which are its pods' names), one member per name.
func StartNamedCluster(t testing.TB, names []string, configure func(*embed.Config)) []*Member {
	t.Helper()
	return startCluster(t, names, nil, configure)
}

func startCluster(t testing.TB, names []string, tlsOf func(name string) TLS, configure func(*embed.Config)) []*Member {
	t.Helper()
	token := "etcdtest-" + randomHex(t, 8)
	members := make([]*Member, len(names))
	g := &group{}
	t.Cleanup(g.stop)
	for i, name := range names {
		var tls TLS
		if tlsOf != nil {
			tls = tlsOf(name)
		}
		members[i] = reserve(t, name, tls)
		members[i].token = token
		members[i].configure = configure
		g.add(members[i])
	}
	for _, m := range members {
		m.start(t, embed.ClusterStateFlagNew, members, false)
	}
	for _, m := range members {
		m.waitReady(t)
	}
	return members
}

// Join starts m as a member of the running cluster of the given members, after the cluster
// has been told of m (as a learner or a voter): initial-cluster-state is existing and
// --initial-cluster lists members and m. Join returns once m has joined and serves clients.
func (m *Member) Join(t testing.TB, members []*Member) {
	t.Helper()
	m.StartJoin(t, members)
	m.waitReady(t)
}

// StartJoin is Join without the wait for m to serve clients: it returns once etcd has started,
// as a joining member's etcd does when member-init execs it. By then etcd has checked its
// --initial-cluster and its --max-learners against the cluster's membership, and StartJoin
// fails the test when etcd refused them; the member may not have published its name, nor
// caught up with the leader, yet.
func (m *Member) StartJoin(t testing.TB, members []*Member) {
	t.Helper()
	if len(members) > 0 && members[0].group != nil {
		members[0].group.add(m)
	} else {
		g := &group{}
		g.add(m)
		t.Cleanup(g.stop)
	}
	all := append([]*Member{m}, members...)
	m.start(t, embed.ClusterStateFlagExisting, all, false)
}

// Restart starts a stopped member again on its data directory, and returns once it serves
// clients. With forceNewCluster it starts as etcd's --force-new-cluster does: a cluster of
// one, every other member dropped from its membership, its data kept.
func (m *Member) Restart(t testing.TB, forceNewCluster bool) {
	t.Helper()
	if !m.stopped.Load() {
		t.Fatalf("restarting etcd member %s, which runs", m.Name)
	}
	m.stopOnce = sync.Once{}
	m.stopped.Store(false)
	m.start(t, embed.ClusterStateFlagExisting, []*Member{m}, forceNewCluster)
	m.waitReady(t)
}

// ID is the member's etcd ID; the member must be running.
func (m *Member) ID() uint64 { return uint64(m.Etcd.Server.MemberID()) }

// Stop stops the member; its data directory stays until the end of the test.
func (m *Member) Stop() {
	if m.Etcd != nil {
		m.stopOnce.Do(func() {
			m.stopped.Store(true)
			m.Etcd.Close()
		})
	}
}

// ClientURLs lists the members' client URLs.
func ClientURLs(members ...*Member) []string {
	out := make([]string, 0, len(members))
	for _, m := range members {
		out = append(out, m.ClientURL)
	}
	return out
}

// start launches the member with --initial-cluster made of cluster (which must contain m),
// and with --force-new-cluster when asked.
func (m *Member) start(t testing.TB, state string, cluster []*Member, forceNewCluster bool) {
	t.Helper()
	initial := make([]string, 0, len(cluster))
	seen := map[string]bool{}
	for _, o := range cluster {
		if !seen[o.Name] {
			seen[o.Name] = true
			initial = append(initial, o.Name+"="+o.PeerURL)
		}
	}
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.Dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenPeerUrls = []url.URL{mustParse(t, m.PeerURL)}
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	cfg.ListenClientUrls = []url.URL{mustParse(t, m.ClientURL)}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	cfg.InitialCluster = strings.Join(initial, ",")
	cfg.ClusterState = state
	cfg.ForceNewCluster = forceNewCluster
	cfg.PeerTLSInfo = m.tls.Peer
	cfg.ClientTLSInfo = m.tls.Client
	if m.token != "" {
		cfg.InitialClusterToken = m.token
	}
	if m.configure != nil {
		m.configure(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd member %s: %v", m.Name, err)
	}
	m.Etcd = e
}

// waitReady waits until the member has joined its cluster and published itself.
func (m *Member) waitReady(t testing.TB) {
	t.Helper()
	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	select {
	case <-m.Etcd.Server.ReadyNotify():
	case err := <-m.Etcd.Err():
		t.Fatalf("etcd member %s failed while starting: %v", m.Name, err)
	case <-m.Etcd.Server.StopNotify():
		t.Fatalf("etcd member %s stopped while starting", m.Name)
	case <-timer.C:
		t.Fatalf("etcd member %s not ready within %s", m.Name, ReadyTimeout)
	}
}

// loopbackHost picks an unused loopback address of 127.0.0.0/8 for one member. Where only
// 127.0.0.1 is configured (not on Linux), every member shares 127.0.0.1.
func loopbackHost(t testing.TB) string {
	t.Helper()
	for range 20 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatalf("picking a loopback address: %v", err)
		}
		// 127.1.0.1 to 127.254.255.254: never 127.0.0.x, never a .0 or .255 host part.
		host := fmt.Sprintf("127.%d.%d.%d", 1+int(b[0])%254, b[1], 1+int(b[2])%254)
		l, err := net.Listen("tcp", host+":0")
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			return "127.0.0.1"
		}
		if err == nil {
			_ = l.Close()
			return host
		}
	}
	t.Fatal("no usable loopback address in 20 tries")
	return ""
}

// freeAddrs returns n host:port addresses whose ports were free on host a moment ago, all
// different: each is held until the last is picked, as a port closed a moment ago may be the
// next one the kernel hands out, and a member whose peer and client ports were the same would
// not start.
func freeAddrs(t testing.TB, host string, n int) []string {
	t.Helper()
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatalf("reserving a port on %s: %v", host, err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("reading random bytes: %v", err)
	}
	return hex.EncodeToString(b)
}

func mustParse(t testing.TB, s string) url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("parsing URL %s: %v", s, err)
	}
	return *u
}
