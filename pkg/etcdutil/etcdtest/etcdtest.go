// Package etcdtest runs real etcd members in the test process (go.etcd.io/etcd/server/v3/embed)
// on loopback ports, so membership code is tested against etcd itself rather than a fake.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Member is one embedded etcd member.
type Member struct {
	Name      string
	PeerURL   string
	ClientURL string
	Etcd      *embed.Etcd
}

// ID is the member's etcd ID.
func (m *Member) ID() uint64 { return uint64(m.Etcd.Server.MemberID()) }

// Stop stops the member.
func (m *Member) Stop() { m.Etcd.Close() }

// Ports reserves a loopback peer URL and client URL for a member not started yet.
func Ports(t *testing.T, name string) *Member {
	t.Helper()
	return &Member{Name: name, PeerURL: "http://" + freeAddr(t), ClientURL: "http://" + freeAddr(t)}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("reserving a port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// StartSeed starts a new one-member cluster.
func StartSeed(t *testing.T) *Member {
	t.Helper()
	m := Ports(t, "m0")
	m.start(t, "new", map[string]string{m.Name: m.PeerURL})
	return m
}

// Join starts m as a member of an existing cluster whose full membership (m included) is
// initial; the member must already have been added (as a learner or voter).
func (m *Member) Join(t *testing.T, initial []*Member) {
	t.Helper()
	cluster := map[string]string{}
	for _, o := range initial {
		cluster[o.Name] = o.PeerURL
	}
	m.start(t, "existing", cluster)
}

func (m *Member) start(t *testing.T, state string, cluster map[string]string) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenPeerUrls = []url.URL{mustURL(t, m.PeerURL)}
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	cfg.ListenClientUrls = []url.URL{mustURL(t, m.ClientURL)}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	var parts []string
	for name, u := range cluster {
		parts = append(parts, name+"="+u)
	}
	cfg.InitialCluster = strings.Join(parts, ",")
	cfg.ClusterState = state
	cfg.InitialClusterToken = "etcdtest"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd member %s: %v", m.Name, err)
	}
	m.Etcd = e
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd member %s failed: %v", m.Name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("etcd member %s not ready within 30s", m.Name)
	}
}

func mustURL(t *testing.T, s string) url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(fmt.Errorf("parsing %s: %w", s, err))
	}
	return *u
}
