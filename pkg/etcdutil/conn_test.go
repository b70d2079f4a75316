package etcdutil

import (
	"crypto/tls"
	"testing"
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
