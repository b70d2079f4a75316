package etcdutil_test

import (
	"context"
	"crypto/tls"
	"io"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// The operator dials members at their addresses and checks their certificates against the
// client Service's name, which the certificates carry and the address dialed is not: the
// clients of the factory and the snapshot stream both connect, and a wrong name is refused.
func TestConnConfigServerName(t *testing.T) {
	ca := newCA(t, "demo CA")
	client := issue(t, ca, clientCert())
	m := startTLSMember(t, newMemberSecret(t, ca))
	conn := func(serverName string) etcdutil.ConnConfig {
		return etcdutil.ConnConfig{
			TLS:        &tls.Config{Certificates: []tls.Certificate{client.tls}, RootCAs: pool(ca), MinVersion: tls.VersionTLS12},
			ServerName: serverName,
		}
	}
	// The snapshot stream has no timeout of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cli, err := etcdutil.NewFactory(0, 0).New([]string{m.member.ClientURL}, conn(clientServiceName))
	if err != nil {
		t.Fatalf("opening a client: %v", err)
	}
	defer cli.Close()
	if _, err := cli.MemberList(ctx); err != nil {
		t.Errorf("member list over TLS checked against %s: %v", clientServiceName, err)
	}
	snap, err := etcdutil.OpenSnapshot(ctx, m.member.ClientURL, conn(clientServiceName))
	if err != nil {
		t.Fatalf("snapshot over TLS checked against %s: %v", clientServiceName, err)
	}
	if _, err := io.ReadFull(snap, make([]byte, 16)); err != nil {
		t.Errorf("reading the snapshot: %v", err)
	}
	_ = snap.Close()

	wrong, err := etcdutil.NewFactory(0, 500*time.Millisecond).New([]string{m.member.ClientURL}, conn("other-client.ns.svc"))
	if err != nil {
		t.Fatalf("opening a client: %v", err)
	}
	defer wrong.Close()
	if _, err := wrong.MemberList(ctx); err == nil {
		t.Error("member list checked against a name the certificate lacks: no error")
	}
}
