package etcdutil_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// What etcd reads again from its TLS files while it runs, shown on the embedded etcd of
// go.mod (docs/tls-reload.md has the sources, for 3.5, 3.6 and 3.7, and what follows for
// the operator). A member's key pairs are read again for every new connection, through the
// paths, so a Secret volume's update reaches it; its trust bundles are read once, at start.
// Should a later etcd read its bundles again, TestTLSReloadTrustBundle fails: CA rotation
// could then do without restarts.

// operatorClient connects to the member as the operator does: at its address, checking its
// certificate against the client Service's name.
func operatorClient(t *testing.T, m *tlsMember, cert leaf, ca pki.KeyPair) etcdutil.Client {
	t.Helper()
	cli, err := etcdutil.NewFactory(0, 0).New([]string{m.member.ClientURL}, etcdutil.ConnConfig{
		TLS:        &tls.Config{Certificates: []tls.Certificate{cert.tls}, RootCAs: pool(ca), MinVersion: tls.VersionTLS12},
		ServerName: clientServiceName,
	})
	if err != nil {
		t.Fatalf("opening a client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// A key pair replaced in the volume serves every new connection from then on, on both
// ports, and the member dials its peers with it, without a restart; connections already
// open go on as they were.
func TestTLSReloadKeyPair(t *testing.T) {
	ca := newCA(t, "demo CA")
	secret := newMemberSecret(t, ca)
	m := startTLSMember(t, secret)
	peer1, server1 := secret.peer, secret.server
	client, peerClient := issue(t, ca, clientCert()), issue(t, ca, peerCert())

	cli := operatorClient(t, m, client, ca)
	fake := newFakePeer(t, issue(t, ca, loopbackPeerCert()))
	if _, err := cli.MemberAddAsLearner(context.Background(), fake.url); err != nil {
		t.Fatalf("adding the fake peer: %v", err)
	}
	fake.await(t, "the member dials with its first peer certificate", func(h handshake) bool {
		return h.err == nil && h.client.Cmp(peer1.serial()) == 0
	})

	before, err := dial(m.clientAddr, client.tls, pool(ca), clientServiceName)
	if err != nil {
		t.Fatalf("client port before the update: %v", err)
	}
	defer before.tls.Close()
	peerBefore, err := dial(m.peerAddr, peerClient.tls, pool(ca), memberName)
	if err != nil {
		t.Fatalf("peer port before the update: %v", err)
	}
	defer peerBefore.tls.Close()
	if before.served().Cmp(server1.serial()) != 0 || peerBefore.served().Cmp(peer1.serial()) != 0 {
		t.Fatalf("before the update, served %x and %x; want %x and %x",
			before.served(), peerBefore.served(), server1.serial(), peer1.serial())
	}

	renewed := secret
	renewed.peer, renewed.server = issue(t, ca, peerCert()), issue(t, ca, serverCert())
	peer2, server2 := renewed.peer, renewed.server
	m.volume.update(t, renewed.files())

	// The first connection after the update gets the new certificate: it is read per
	// handshake, not on a timer.
	after, err := dial(m.clientAddr, client.tls, pool(ca), clientServiceName)
	if err != nil {
		t.Fatalf("client port after the update: %v", err)
	}
	defer after.tls.Close()
	if after.served().Cmp(server2.serial()) != 0 {
		t.Errorf("client port after the update served %x, want the new %x (the old was %x)",
			after.served(), server2.serial(), server1.serial())
	}
	peerAfter, err := dial(m.peerAddr, peerClient.tls, pool(ca), memberName)
	if err != nil {
		t.Fatalf("peer port after the update: %v", err)
	}
	defer peerAfter.tls.Close()
	if peerAfter.served().Cmp(peer2.serial()) != 0 {
		t.Errorf("peer port after the update served %x, want the new %x (the old was %x)",
			peerAfter.served(), peer2.serial(), peer1.serial())
	}
	fake.await(t, "the member dials with its new peer certificate", func(h handshake) bool {
		return h.err == nil && h.client.Cmp(peer2.serial()) == 0
	})

	// Connections open before the update are neither closed nor renegotiated.
	if err := before.get(); err != nil {
		t.Errorf("client port, connection from before the update: %v", err)
	}
	if err := peerBefore.get(); err != nil {
		t.Errorf("peer port, connection from before the update: %v", err)
	}
	if before.served().Cmp(server1.serial()) != 0 {
		t.Errorf("connection from before the update now shows %x, want %x still", before.served(), server1.serial())
	}
	if _, err := cli.MemberList(context.Background()); err != nil {
		t.Errorf("operator's client from before the update: %v", err)
	}
	if _, err := operatorClient(t, m, client, ca).MemberList(context.Background()); err != nil {
		t.Errorf("operator's client opened after the update: %v", err)
	}
}

// A trust bundle replaced in the volume (the old CA and a new one) changes nothing until
// the member restarts: a client or a peer with a certificate of the new CA is refused on
// both ports, and the member refuses a peer serving one; after a restart on the same files
// all three are accepted.
func TestTLSReloadTrustBundle(t *testing.T) {
	ca, next := newCA(t, "demo CA"), newCA(t, "next demo CA")
	secret := newMemberSecret(t, ca)
	m := startTLSMember(t, secret)
	client, peerClient := issue(t, ca, clientCert()), issue(t, ca, peerCert())
	nextClient, nextPeerClient := issue(t, next, clientCert()), issue(t, next, peerCert())

	fake := newFakePeer(t, issue(t, ca, loopbackPeerCert()))
	if _, err := operatorClient(t, m, client, ca).MemberAddAsLearner(context.Background(), fake.url); err != nil {
		t.Fatalf("adding the fake peer: %v", err)
	}
	fake.await(t, "the member dials the fake peer", func(h handshake) bool { return h.err == nil })
	refused(t, "client port before the update", m.clientAddr, nextClient, pool(ca), clientServiceName)

	trusting := secret
	trusting.peerCA = pki.Bundle(ca.CertPEM, next.CertPEM)
	trusting.clientCA = trusting.peerCA
	m.volume.update(t, trusting.files())

	refused(t, "client port after the update", m.clientAddr, nextClient, pool(ca), clientServiceName)
	refused(t, "peer port after the update", m.peerAddr, nextPeerClient, pool(ca), memberName)
	// The old CA's certificates still pass: the refusals above are the new CA's.
	accepted(t, "client port after the update, old CA", m.clientAddr, client, pool(ca), clientServiceName)
	accepted(t, "peer port after the update, old CA", m.peerAddr, peerClient, pool(ca), memberName)
	nextPeer := issue(t, next, loopbackPeerCert())
	fake.serve(nextPeer)
	// The member refuses the peer's certificate; Go's client reports any such refusal as
	// "bad certificate".
	fake.await(t, "the member refuses a peer of the new CA", func(h handshake) bool {
		return h.served.Cmp(nextPeer.serial()) == 0 && h.err != nil && strings.Contains(h.err.Error(), "bad certificate")
	})

	m.member.Stop()
	m.member.Restart(t, false)

	accepted(t, "client port after a restart", m.clientAddr, nextClient, pool(ca), clientServiceName)
	accepted(t, "peer port after a restart", m.peerAddr, nextPeerClient, pool(ca), memberName)
	fake.await(t, "the member accepts a peer of the new CA after a restart", func(h handshake) bool {
		return h.served.Cmp(nextPeer.serial()) == 0 && h.err == nil
	})
}

// refused checks that the member refuses cert as not of a CA it trusts.
func refused(t *testing.T, what, addr string, cert leaf, roots *x509.CertPool, serverName string) {
	t.Helper()
	c, err := dial(addr, cert.tls, roots, serverName)
	if err == nil {
		_ = c.tls.Close()
		t.Errorf("%s: a certificate of an untrusted CA was accepted", what)
		return
	}
	if !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Errorf("%s: refused with %v, want unknown certificate authority", what, err)
	}
}

// accepted checks that the member accepts cert.
func accepted(t *testing.T, what, addr string, cert leaf, roots *x509.CertPool, serverName string) {
	t.Helper()
	c, err := dial(addr, cert.tls, roots, serverName)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	_ = c.tls.Close()
}
