package etcdutil_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A member whose client port moves on or off TLS serves both on one port for a while
// (member.ClientDual: etcd's --listen-client-urls names the port with each scheme): a client
// in plaintext is served without a certificate, one over TLS only with a certificate of the
// client CA. This is what lets the operator, member-init and applications go on dialling the
// scheme they dialled while the members are rolled one by one.
func TestClientPortServesPlaintextAndTLS(t *testing.T) {
	ca := newCA(t, "demo CA")
	secret := newMemberSecret(t, ca)
	v := newSecretVolume(t, secret.files())
	m := etcdtest.StartTLSCluster(t, 1, func(string) etcdtest.TLS {
		return etcdtest.TLS{Client: secretClientTLS(v)}
	}, func(cfg *embed.Config) {
		plain := cfg.ListenClientUrls[0]
		plain.Scheme = "http"
		cfg.ListenClientUrls = append(cfg.ListenClientUrls, plain)
	})[0]
	if !strings.HasPrefix(m.ClientURL, "https://") {
		t.Fatalf("member's client URL %s, want https", m.ClientURL)
	}
	ctx := context.Background()

	plaintext, err := etcdutil.NewFactory(0, 0).New([]string{"http://" + strings.TrimPrefix(m.ClientURL, "https://")}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatalf("opening a plaintext client: %v", err)
	}
	defer plaintext.Close()
	if _, err := plaintext.MemberList(ctx); err != nil {
		t.Errorf("a plaintext client is refused on the dual port: %v", err)
	}

	secure := operatorClient(t, &tlsMember{member: m}, issue(t, ca, clientCert()), ca)
	if _, err := secure.MemberList(ctx); err != nil {
		t.Errorf("a client with a certificate is refused on the dual port: %v", err)
	}

	noCert, err := etcdutil.NewFactory(0, 0).New([]string{m.ClientURL}, etcdutil.ConnConfig{
		TLS: &tls.Config{RootCAs: pool(ca), MinVersion: tls.VersionTLS12}, ServerName: clientServiceName})
	if err != nil {
		t.Fatalf("opening a client without a certificate: %v", err)
	}
	defer noCert.Close()
	if _, err := noCert.MemberList(ctx); err == nil {
		t.Error("a TLS client without a certificate is served on the dual port")
	}
	other := newCA(t, "another CA")
	stranger := operatorClient(t, &tlsMember{member: m}, issue(t, other, clientCert()), ca)
	if _, err := stranger.MemberList(ctx); err == nil {
		t.Error("a client with another CA's certificate is served on the dual port")
	}
}

// secretClientTLS is the client port's TLS of a member pod, from its Secret volume v.
func secretClientTLS(v *secretVolume) (info transport.TLSInfo) {
	info.CertFile, info.KeyFile = v.path(member.KeyServerCert), v.path(member.KeyServerKey)
	info.TrustedCAFile, info.ClientCertAuth = v.path(member.KeyClientCA), true
	return info
}
