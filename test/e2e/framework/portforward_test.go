package framework

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// fakeKubectl is a kubectl that prints what `kubectl port-forward` prints for addr, then
// exits at once (as kubectl does after a connection the pod reset) or, with stay, runs on.
// Each start appends a line to the file it returns.
func fakeKubectl(t *testing.T, addr string, stay bool) (kubectl, starts string) {
	dir := t.TempDir()
	starts = filepath.Join(dir, "starts")
	script := "#!/bin/sh\necho start >>" + starts + "\necho 'Forwarding from " + addr + " -> 2379'\n"
	if stay {
		script += "exec sleep 60\n"
	}
	kubectl = filepath.Join(dir, "kubectl")
	if err := os.WriteFile(kubectl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return kubectl, starts
}

func countStarts(t *testing.T, starts string) int {
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "start")
}

// tlsServer serves a certificate of its own that requires a client certificate, as etcd's
// ports do, and returns its address and certificate.
func tlsServer(t *testing.T) (string, pki.KeyPair) {
	now := time.Now()
	ca, err := pki.NewCA("test CA", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.Issue(ca, pki.Request{CommonName: "server", DNSNames: []string{"server"}, Usages: pki.ServerAuth, Lifetime: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	return l.Addr().String(), leaf
}

// TestForwardStartsAgainOnceKubectlExits: a forward whose kubectl exited is started again, and
// the certificate of a server that demands a client certificate is seen through it.
func TestForwardStartsAgainOnceKubectlExits(t *testing.T) {
	addr, leaf := tlsServer(t)
	kubectl, starts := fakeKubectl(t, addr, false)
	f := &Framework{t: t, kubectl: kubectl, Namespace: "ns"}
	fw := f.PortForward("pod", 2379)
	fw.mu.Lock()
	done := fw.done
	fw.mu.Unlock()
	<-done
	c, err := fw.ServedCertificate()
	if err != nil {
		t.Fatal(err)
	}
	if c.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0 {
		t.Errorf("served serial %s, want the server's %s", c.SerialNumber, leaf.Cert.SerialNumber)
	}
	if n := countStarts(t, starts); n != 2 {
		t.Errorf("kubectl started %d times, want 2: once, and again after it exited", n)
	}
}

func TestForwardKeptWhileKubectlRuns(t *testing.T) {
	kubectl, starts := fakeKubectl(t, "127.0.0.1:1", true)
	f := &Framework{t: t, kubectl: kubectl, Namespace: "ns"}
	fw := f.PortForward("pod", 2379)
	for i := 0; i < 3; i++ {
		if addr, err := fw.Addr(); err != nil || addr != "127.0.0.1:1" {
			t.Fatalf("Addr = %q, %v", addr, err)
		}
	}
	if n := countStarts(t, starts); n != 1 {
		t.Errorf("kubectl started %d times, want once", n)
	}
}
