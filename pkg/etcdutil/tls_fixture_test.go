package etcdutil_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// The fixtures of the TLS tests: a member serving TLS with the files and flags the operator
// gives member 0 of cluster demo (update_test.go), certificates of pkg/pki for that member's
// names, a directory written the way the kubelet writes a Secret volume, raw TLS
// connections that show which certificate served them, and a peer URL that shows which
// certificate a member dials with.

const (
	// ioTimeout bounds one connection's handshake and request, so a test that goes wrong
	// fails rather than hangs.
	ioTimeout = 5 * time.Second
	// leafLifetime outlasts any test; CAs live a day.
	leafLifetime = time.Hour
)

var (
	// clientServiceName is the name the operator checks the certificates of members'
	// client ports against, as it dials them by address.
	clientServiceName = member.ClientServiceHost(demo)
	// memberName is a name of the member in its peer certificate.
	memberName = member.Host(demo.Name, demo.Namespace, 0)
)

// leaf is a certificate of pkg/pki, with its key, as crypto/tls takes it.
type leaf struct {
	pki.KeyPair
	tls tls.Certificate
}

func (l leaf) serial() *big.Int { return l.Cert.SerialNumber }

func newCA(t *testing.T, name string) pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA(name, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatalf("making CA %s: %v", name, err)
	}
	return ca
}

func issue(t *testing.T, ca pki.KeyPair, r pki.Request) leaf {
	t.Helper()
	r.Lifetime = leafLifetime
	kp, err := pki.Issue(ca, r, time.Now())
	if err != nil {
		t.Fatalf("issuing %s: %v", r.CommonName, err)
	}
	l := leaf{KeyPair: kp}
	if l.tls, err = tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
		t.Fatalf("loading %s: %v", r.CommonName, err)
	}
	return l
}

// The certificates of member 0, as the operator issues them: the peer certificate, the
// client port's, and the member's client certificate (also what a client of the port
// presents).
func peerCert() pki.Request {
	return pki.Request{CommonName: member.Name(demo.Name, 0), DNSNames: member.MemberNames(demo, 0), Usages: pki.ServerAuth | pki.ClientAuth}
}

func serverCert() pki.Request {
	names := append(member.MemberNames(demo, 0), member.ClientServiceNames(demo)...)
	return pki.Request{
		CommonName: member.Name(demo.Name, 0),
		DNSNames:   append(names, "localhost"),
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages:     pki.ServerAuth,
	}
}

func clientCert() pki.Request {
	return pki.Request{CommonName: member.ClientTLSSecretName(demo.Name), Usages: pki.ClientAuth}
}

// loopbackPeerCert is the certificate of a peer reached at 127.0.0.1.
func loopbackPeerCert() pki.Request {
	return pki.Request{CommonName: "fake-peer", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: pki.ServerAuth | pki.ClientAuth}
}

func pool(cas ...pki.KeyPair) *x509.CertPool {
	p := x509.NewCertPool()
	for _, ca := range cas {
		p.AddCert(ca.Cert)
	}
	return p
}

// memberSecret is what the operator keeps in the member's Secret.
type memberSecret struct {
	peer, server, client       leaf
	peerCA, serverCA, clientCA []byte
}

func (s memberSecret) files() map[string][]byte {
	return map[string][]byte{
		member.KeyPeerCert:   s.peer.CertPEM,
		member.KeyPeerKey:    s.peer.KeyPEM,
		member.KeyPeerCA:     s.peerCA,
		member.KeyServerCert: s.server.CertPEM,
		member.KeyServerKey:  s.server.KeyPEM,
		member.KeyServerCA:   s.serverCA,
		member.KeyClientCA:   s.clientCA,
		member.KeyClientCert: s.client.CertPEM,
		member.KeyClientKey:  s.client.KeyPEM,
	}
}

// newMemberSecret issues the member's certificates, all of ca, which it trusts alone.
func newMemberSecret(t *testing.T, ca pki.KeyPair) memberSecret {
	t.Helper()
	return memberSecret{
		peer:     issue(t, ca, peerCert()),
		server:   issue(t, ca, serverCert()),
		client:   issue(t, ca, clientCert()),
		peerCA:   ca.CertPEM,
		serverCA: ca.CertPEM,
		clientCA: ca.CertPEM,
	}
}

// tlsMember is one embedded member serving peer and client TLS from a Secret-like volume.
type tlsMember struct {
	member     *etcdtest.Member
	volume     *secretVolume
	clientAddr string
	peerAddr   string
}

// startTLSMember starts a member on secret with the flags the operator gives one (pkg/member,
// peerTLSArgs and clientTLSArgs).
func startTLSMember(t *testing.T, secret memberSecret) *tlsMember {
	t.Helper()
	v := newSecretVolume(t, secret.files())
	m := etcdtest.StartTLSCluster(t, 1, func(string) etcdtest.TLS {
		return etcdtest.TLS{
			Peer: transport.TLSInfo{
				CertFile:       v.path(member.KeyPeerCert),
				KeyFile:        v.path(member.KeyPeerKey),
				TrustedCAFile:  v.path(member.KeyPeerCA),
				ClientCertAuth: true,
				// Peers dial from addresses their certificates do not name.
				SkipClientSANVerify: true,
			},
			Client: transport.TLSInfo{
				CertFile:       v.path(member.KeyServerCert),
				KeyFile:        v.path(member.KeyServerKey),
				ClientCertFile: v.path(member.KeyClientCert),
				ClientKeyFile:  v.path(member.KeyClientKey),
				TrustedCAFile:  v.path(member.KeyClientCA),
				ClientCertAuth: true,
			},
		}
	}, nil)[0]
	return &tlsMember{member: m, volume: v, clientAddr: hostPort(t, m.ClientURL), peerAddr: hostPort(t, m.PeerURL)}
}

func hostPort(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parsing %s: %v", rawURL, err)
	}
	return u.Host
}

// secretVolume is a directory laid out as the kubelet lays out a Secret volume: each file
// name is a symlink into ..data, a symlink to a directory of this version's files. An update
// writes a new directory and renames a new ..data over the old (one atomic step), then
// removes the old directory: a program sees new contents only if it opens the paths again.
type secretVolume struct {
	dir     string
	version int
}

func newSecretVolume(t *testing.T, files map[string][]byte) *secretVolume {
	t.Helper()
	v := &secretVolume{dir: t.TempDir()}
	v.update(t, files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), v.path(name)); err != nil {
			t.Fatalf("linking %s: %v", name, err)
		}
	}
	return v
}

func (v *secretVolume) path(name string) string { return filepath.Join(v.dir, name) }

// update replaces every file at once; files has the names the volume was made with.
func (v *secretVolume) update(t *testing.T, files map[string][]byte) {
	t.Helper()
	old := fmt.Sprintf("..%d", v.version)
	v.version++
	next := fmt.Sprintf("..%d", v.version)
	if err := os.Mkdir(v.path(next), 0o755); err != nil {
		t.Fatalf("making %s: %v", next, err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(v.path(next), name), b, 0o600); err != nil {
			t.Fatalf("writing %s: %v", name, err)
		}
	}
	if err := os.Symlink(next, v.path("..data_tmp")); err != nil {
		t.Fatalf("linking ..data_tmp: %v", err)
	}
	if err := os.Rename(v.path("..data_tmp"), v.path("..data")); err != nil {
		t.Fatalf("swapping ..data: %v", err)
	}
	if err := os.RemoveAll(v.path(old)); err != nil {
		t.Fatalf("removing %s: %v", old, err)
	}
}

// conn is one TLS connection to a member, kept open to send requests on.
type conn struct {
	tls *tls.Conn
	br  *bufio.Reader
}

// dial connects to addr with cert, checks the server's certificate against roots for
// serverName, and sends a first request: in TLS 1.3 the server judges the client's
// certificate after the client's side of the handshake is done, so only an answer shows
// the connection was accepted. The certificate is sent whatever CAs the server asks for
// (as etcd's own clients do), so that the server, not the client, judges it.
func dial(addr string, cert tls.Certificate, roots *x509.CertPool, serverName string) (*conn, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", addr, &tls.Config{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		RootCAs:              roots,
		ServerName:           serverName,
		MinVersion:           tls.VersionTLS13,
	})
	if err != nil {
		return nil, err
	}
	cn := &conn{tls: c, br: bufio.NewReader(c)}
	if err := cn.get(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return cn, nil
}

// get sends a request on the connection and reads the answer (any status).
func (c *conn) get() error {
	if err := c.tls.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodGet, "https://"+c.tls.ConnectionState().ServerName+"/version", nil)
	if err != nil {
		return err
	}
	if err := req.Write(c.tls); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return err
}

// served is the serial number of the certificate the server presented.
func (c *conn) served() *big.Int { return c.tls.ConnectionState().PeerCertificates[0].SerialNumber }

// handshake is one TLS handshake a fakePeer took part in.
type handshake struct {
	// served is the serial number of the fake peer's own certificate.
	served *big.Int
	// client is the serial number of the certificate the member dialed with; nil on error.
	client *big.Int
	err    error
}

func (h handshake) String() string {
	if h.err != nil {
		return fmt.Sprintf("serving %x: %v", h.served, h.err)
	}
	return fmt.Sprintf("serving %x: member's certificate %x", h.served, h.client)
}

// fakePeer stands at the peer URL of a learner that never starts: the leader dials it
// again and again, and it records each handshake (which certificate the leader presented,
// or why the handshake failed) and closes the connection.
type fakePeer struct {
	url        string
	cert       atomic.Pointer[tls.Certificate]
	handshakes chan handshake
}

func newFakePeer(t *testing.T, cert leaf) *fakePeer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening for the fake peer: %v", err)
	}
	p := &fakePeer{url: "https://" + l.Addr().String(), handshakes: make(chan handshake, 64)}
	p.serve(cert)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.handle(c) })
		}
	})
	return p
}

// serve makes the fake peer present cert from its next handshake on.
func (p *fakePeer) serve(cert leaf) { p.cert.Store(&cert.tls) }

func (p *fakePeer) handle(c net.Conn) {
	defer c.Close()
	cert := p.cert.Load()
	tc := tls.Server(c, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		// Any certificate: what the member presents is recorded, not judged.
		ClientAuth: tls.RequireAnyClientCert,
	})
	h := handshake{served: cert.Leaf.SerialNumber}
	if h.err = tc.SetDeadline(time.Now().Add(ioTimeout)); h.err == nil {
		h.err = tc.Handshake()
	}
	if h.err == nil {
		h.client = tc.ConnectionState().PeerCertificates[0].SerialNumber
	}
	// Handshakes nobody waits for are dropped: a test waits for one after a change.
	select {
	case p.handshakes <- h:
	default:
	}
}

// await waits for a handshake for which ok holds; the leader redials a peer it cannot
// reach every 100 ms, so one comes quickly once the member does what ok asks.
func (p *fakePeer) await(t *testing.T, what string, ok func(handshake) bool) {
	t.Helper()
	const timeout = 20 * time.Second
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	last := "none"
	for {
		select {
		case h := <-p.handshakes:
			if ok(h) {
				return
			}
			last = h.String()
		case <-deadline.C:
			t.Fatalf("fake peer: no handshake where %s within %s; the last: %s", what, timeout, last)
		}
	}
}
