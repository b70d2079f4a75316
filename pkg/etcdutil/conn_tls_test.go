package etcdutil_test

import (
	"context"
	"crypto/tls"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// The operator dials members at their addresses and checks their certificates against the
// client Service's name, which the certificates carry and the address dialed is not: the
// clients of the factory (their calls to the cluster and to one member) and the snapshot
// stream all connect, and a wrong name is refused.
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
	if _, err := cli.Status(ctx, m.member.ClientURL); err != nil {
		t.Errorf("status over TLS checked against %s: %v", clientServiceName, err)
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
	if _, err := wrong.Status(ctx, m.member.ClientURL); err == nil {
		t.Error("status checked against a name the certificate lacks: no error")
	}
}

// PEMConnConfig, from a client Secret's three PEM values, connects to a member checked against
// the client Service's name; one that does not parse is refused with an error that quotes none
// of the key's bytes.
func TestPEMConnConfig(t *testing.T) {
	ca := newCA(t, "demo CA")
	client := issue(t, ca, clientCert())
	m := startTLSMember(t, newMemberSecret(t, ca))
	conn, err := etcdutil.PEMConnConfig(ca.CertPEM, client.CertPEM, client.KeyPEM, clientServiceName)
	if err != nil {
		t.Fatalf("PEMConnConfig: %v", err)
	}
	cli, err := etcdutil.NewFactory(0, 0).New([]string{m.member.ClientURL}, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.MemberList(context.Background()); err != nil {
		t.Errorf("member list with the Secret's certificate: %v", err)
	}

	other := issue(t, ca, clientCert())
	for _, tc := range []struct {
		desc          string
		ca, cert, key []byte
		wantInMessage string
	}{
		{"a key of another certificate", ca.CertPEM, client.CertPEM, other.KeyPEM, "the client certificate and its key"},
		{"no CA", nil, client.CertPEM, client.KeyPEM, "the CA"},
		{"a key that is not PEM", ca.CertPEM, client.CertPEM, other.KeyPEM[40:], "the client certificate and its key"},
	} {
		_, err := etcdutil.PEMConnConfig(tc.ca, tc.cert, tc.key, clientServiceName)
		if err == nil || !strings.Contains(err.Error(), tc.wantInMessage) {
			t.Errorf("%s: %v, want an error about %s", tc.desc, err, tc.wantInMessage)
			continue
		}
		for _, key := range [][]byte{client.KeyPEM, other.KeyPEM} {
			for _, line := range strings.Split(string(key), "\n") {
				if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
					t.Errorf("%s: the error quotes the key: %v", tc.desc, err)
				}
			}
		}
	}
}
