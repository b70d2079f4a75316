package etcdutil_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// A peer CA rotation on three real members, in the operator's order (pkg/cluster/plan,
// rotation.go), with the files of each member in a directory updated as the kubelet updates a
// Secret volume: members restarted one at a time onto a bundle of the old and the new CA;
// leaves of the new CA swapped in without a restart, while the others still serve the old
// CA's (a member restarted then connects to both kinds); the old CA dropped, members
// restarted once more. The cluster takes writes after every restart, and ProbeTLS sees what
// each member trusts and serves at each step, as the operator reads it.

// rotatingMember is one member's Secret volume and what it holds.
type rotatingMember struct {
	volume  *secretVolume
	host    string
	issuer  pki.KeyPair
	trust   []byte
	current leaf
}

// files issues the member's leaf from its issuer when it has none of it, and returns what its
// Secret holds.
func (m *rotatingMember) files(t *testing.T) map[string][]byte {
	t.Helper()
	if m.current.Cert == nil || m.current.Cert.CheckSignatureFrom(m.issuer.Cert) != nil {
		m.current = issue(t, m.issuer, pki.Request{CommonName: "peer", DNSNames: []string{"localhost"},
			IPs: []net.IP{net.ParseIP(m.host)}, Usages: pki.ServerAuth | pki.ClientAuth})
	}
	return map[string][]byte{member.KeyPeerCert: m.current.CertPEM, member.KeyPeerKey: m.current.KeyPEM, member.KeyPeerCA: m.trust}
}

func (m *rotatingMember) write(t *testing.T) { m.volume.update(t, m.files(t)) }

// startRotatingCluster starts three members with peer TLS, their leaves of ca, which they
// trust alone.
func startRotatingCluster(t *testing.T, ca pki.KeyPair) ([]*etcdtest.Member, map[string]*rotatingMember) {
	secrets := map[string]*rotatingMember{}
	// The peer URLs are https once a member has peer TLS files; the files, whose leaves name
	// the member's address, are made when it first starts and pointed at on every start.
	https := func(string) etcdtest.TLS { return etcdtest.TLS{Peer: transport.TLSInfo{CertFile: "set on start"}} }
	configure := func(cfg *embed.Config) {
		m := secrets[cfg.Name]
		if m == nil {
			m = &rotatingMember{host: cfg.ListenPeerUrls[0].Hostname(), issuer: ca, trust: ca.CertPEM}
			m.volume = newSecretVolume(t, m.files(t))
			secrets[cfg.Name] = m
		}
		cfg.PeerTLSInfo = transport.TLSInfo{CertFile: m.volume.path(member.KeyPeerCert), KeyFile: m.volume.path(member.KeyPeerKey),
			TrustedCAFile: m.volume.path(member.KeyPeerCA), ClientCertAuth: true, SkipClientSANVerify: true}
	}
	return etcdtest.StartTLSCluster(t, 3, https, configure), secrets
}

func TestCARotationOnRealMembers(t *testing.T) {
	oldCA, newCA := newCA(t, "old peer CA"), newCA(t, "new peer CA")
	members, secrets := startRotatingCluster(t, oldCA)
	cli := plainClient(t, members)
	put := func(step string) {
		t.Helper()
		for _, m := range members {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := cli.Put(ctx, "rotation/"+step+"/"+m.Name, "ok")
			cancel()
			if err != nil {
				t.Fatalf("%s: a write: %v", step, err)
			}
		}
	}
	restart := func(step string) {
		t.Helper()
		for _, m := range members {
			secrets[m.Name].write(t)
			m.Stop()
			m.Restart(t, false)
			put(fmt.Sprintf("%s-%s", step, m.Name))
		}
	}
	newClient := issue(t, newCA, pki.Request{CommonName: "probe", Usages: pki.ClientAuth})
	oldClient := issue(t, oldCA, pki.Request{CommonName: "probe", Usages: pki.ClientAuth})
	put("start")
	probeAll(t, "before the rotation, a certificate of the new CA", members, secrets, newClient, oldCA, false, oldCA)

	// 1. Both CAs trusted, members restarted one at a time.
	for _, m := range secrets {
		m.trust = pki.Bundle(oldCA.CertPEM, newCA.CertPEM)
	}
	restart("trusting-both")
	probeAll(t, "trusting both, a certificate of the new CA", members, secrets, newClient, oldCA, true, oldCA)

	// 2. Leaves of the new CA, one member's Secret after the other, no restart. Halfway, a
	// member restarted (new peer connections) reaches one member serving a leaf of the new
	// CA and one serving the old CA's.
	secrets[members[0].Name].issuer = newCA
	secrets[members[0].Name].write(t)
	members[1].Stop()
	members[1].Restart(t, false)
	put("mixed-leaves")
	for _, m := range members[1:] {
		secrets[m.Name].issuer = newCA
		secrets[m.Name].write(t)
	}
	probeAll(t, "reissued, a certificate of the new CA", members, secrets, newClient, newCA, true, newCA)

	// 3. The old CA dropped, members restarted one at a time.
	for _, m := range secrets {
		m.trust = newCA.CertPEM
	}
	restart("dropping-old")
	probeAll(t, "after the rotation, a certificate of the old CA", members, secrets, oldClient, newCA, false, newCA)
	probeAll(t, "after the rotation, a certificate of the new CA", members, secrets, newClient, newCA, true, newCA)
	if resp, err := cli.MemberList(context.Background()); err != nil || len(resp.Members) != 3 {
		t.Fatalf("member list after the rotation: %v %v", resp, err)
	}
}

// probeAll probes every member's peer port with client as ProbeTLS does: it must be
// accepted or not as said, and the leaf served must be signed by servedBy.
func probeAll(t *testing.T, what string, members []*etcdtest.Member, secrets map[string]*rotatingMember, client leaf,
	servedBy pki.KeyPair, accept bool, roots ...pki.KeyPair) {
	t.Helper()
	for _, m := range members {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		served, err := etcdutil.ProbeTLS(ctx, m.PeerURL, client.tls, pool(roots...), secrets[m.Name].host)
		cancel()
		if (err == nil) != accept {
			t.Errorf("%s: member %s answered with error %v, want accepted %v", what, m.Name, err, accept)
		}
		if pki.ChainSignedBy(served, []*x509.Certificate{servedBy.Cert}) == "" {
			t.Errorf("%s: member %s served %v, want a leaf of %s", what, m.Name, served, servedBy.Cert.Subject.CommonName)
		}
	}
}

// plainClient is a client of the members' plaintext client URLs that logs nothing.
func plainClient(t *testing.T, members []*etcdtest.Member) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.ClientURLs(members...), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
