package etcdutil

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// A zero ConnConfig dials in plaintext, as before per-cluster settings; with TLS, the server
// name given replaces the configuration's own, on a copy the caller's stays apart from.
func TestTLSConfig(t *testing.T) {
	if cfg := tlsConfig(ConnConfig{}); cfg != nil {
		t.Errorf("tlsConfig of a zero ConnConfig = %+v, want nil (plaintext)", cfg)
	}
	given := &tls.Config{ServerName: "given", MinVersion: tls.VersionTLS13}
	if cfg := tlsConfig(ConnConfig{TLS: given}); cfg == given || cfg.ServerName != "given" || cfg.MinVersion != tls.VersionTLS13 {
		t.Errorf("tlsConfig without a server name = %p %+v, want a copy of %p", cfg, cfg, given)
	}
	cfg := tlsConfig(ConnConfig{TLS: given, ServerName: "demo-client.ns.svc"})
	if cfg.ServerName != "demo-client.ns.svc" || cfg.MinVersion != tls.VersionTLS13 {
		t.Errorf("tlsConfig with a server name = %+v, want ServerName demo-client.ns.svc", cfg)
	}
	if given.ServerName != "given" {
		t.Errorf("tlsConfig changed the caller's configuration: ServerName %q", given.ServerName)
	}
}

// gRPC starts each handshake with the address's host as the server name (a pod IP), whatever
// the configuration says; with a ServerName, the member's certificate is still checked
// against it, and against the configuration's CAs.
func TestTLSConfigChecksTheServerNameGRPCReplaces(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("ca", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("other", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, tc := range []struct {
		name   string
		issuer pki.KeyPair
		names  []string
		ok     bool
	}{
		{"the name, from the CA", ca, []string{"demo-client.ns.svc"}, true},
		{"another name", ca, []string{"other-client.ns.svc"}, false},
		{"another CA", other, []string{"demo-client.ns.svc"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf, err := pki.Issue(tc.issuer, pki.Request{CommonName: "m", DNSNames: tc.names, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: pki.ServerAuth, Lifetime: time.Hour}, now)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				if c, err := l.Accept(); err == nil {
					_ = c.(*tls.Conn).Handshake()
					c.Close()
				}
			}()
			cfg := tlsConfig(ConnConfig{TLS: &tls.Config{RootCAs: roots}, ServerName: "demo-client.ns.svc"})
			// What gRPC does to the configuration before each handshake.
			cfg = cfg.Clone()
			cfg.ServerName = "127.0.0.1"
			c, err := tls.Dial("tcp", l.Addr().String(), cfg)
			if c != nil {
				c.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("handshake error %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
