package pki

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestHandshake is the proof that Issue's usages, names and chains are what Go's TLS, and so
// etcd, accepts: a server and a client, each with a leaf of its own, handshake with client
// authentication required, as the client port (--client-cert-auth) and the peer port
// (--peer-client-cert-auth) do. The failing cases show the handshake is not waved through.
func TestHandshake(t *testing.T) {
	ca, other := mustCA(t, "example-client-ca"), mustCA(t, "other-ca")
	serverName := "example-client.default.svc"
	serverReq := Request{
		CommonName: "example-0",
		DNSNames:   []string{"example-0.default.svc", "example-client", "example-client.default", serverName, "localhost"},
		IPs:        []net.IP{net.ParseIP("127.0.0.1")},
		Usages:     ServerAuth,
		Lifetime:   time.Hour,
	}
	server := mustIssue(t, ca, serverReq)
	client := mustIssue(t, ca, Request{CommonName: "example-client", Usages: ClientAuth, Lifetime: time.Hour})
	// A client certificate with the server's names, so that only its usage is wrong.
	namedClient := mustIssue(t, ca, Request{CommonName: "example-client", DNSNames: serverReq.DNSNames, Usages: ClientAuth, Lifetime: time.Hour})
	peerReq := memberRequest()
	peer := mustIssue(t, ca, peerReq)
	foreignClient := mustIssue(t, other, Request{CommonName: "intruder", Usages: ClientAuth, Lifetime: time.Hour})

	for name, tc := range map[string]struct {
		server, client KeyPair
		serverName     string
		serverTrusts   []byte
		clientTrusts   []byte
		fails          string // what the side that refuses says; "" when both accept
	}{
		"client port":              {server, client, serverName, ca.CertPEM, ca.CertPEM, ""},
		"client port by IP":        {server, client, "127.0.0.1", ca.CertPEM, ca.CertPEM, ""},
		"client port by localhost": {server, client, "localhost", ca.CertPEM, ca.CertPEM, ""},
		"peers, one leaf each way": {peer, peer, "example-0.example.default.svc", ca.CertPEM, ca.CertPEM, ""},
		"trust in a bundle":        {server, client, serverName, Bundle(other.CertPEM, ca.CertPEM), Bundle(ca.CertPEM, other.CertPEM), ""},
		"client cert as server":    {namedClient, client, serverName, ca.CertPEM, ca.CertPEM, "incompatible key usage"},
		"server cert as client":    {server, server, serverName, ca.CertPEM, ca.CertPEM, "incompatible key usage"},
		"client of another CA":     {server, foreignClient, serverName, ca.CertPEM, ca.CertPEM, "unknown authority"},
		"a name the server lacks":  {server, client, "example-1.default.svc", ca.CertPEM, ca.CertPEM, "not example-1.default.svc"},
		"client trusts another CA": {server, client, serverName, ca.CertPEM, other.CertPEM, "unknown authority"},
	} {
		for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			t.Run(name+"/"+tls.VersionName(version), func(t *testing.T) {
				serverErr, clientErr := handshake(t, tc.server, tc.client, tc.serverName, tc.serverTrusts, tc.clientTrusts, version)
				if tc.fails == "" {
					if serverErr != nil || clientErr != nil {
						t.Errorf("handshake failed: server: %v; client: %v", serverErr, clientErr)
					}
					return
				}
				if !errorSays(serverErr, tc.fails) && !errorSays(clientErr, tc.fails) {
					t.Errorf("server: %v; client: %v; want a side to fail with %q", serverErr, clientErr, tc.fails)
				}
			})
		}
	}
}

// handshake connects a TLS client to a TLS server over loopback, each presenting its
// leaf and trusting its pool, the server requiring a client certificate. Each side's error
// is its handshake's, or the client's reading of the server's greeting; a server that
// completes sends the client's certificate's CN back, and the client checks it.
func handshake(t *testing.T, server, client KeyPair, serverName string, serverTrusts, clientTrusts []byte, version uint16) (serverErr, clientErr error) {
	t.Helper()
	pool := func(pemBytes []byte) *x509.CertPool {
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(pemBytes) {
			t.Fatal("no CA in the pool")
		}
		return p
	}
	pair := func(kp KeyPair) tls.Certificate {
		c, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatalf("crypto/tls cannot load the key pair: %v", err)
		}
		return c
	}
	// Loopback TCP rather than net.Pipe: a side that refuses writes its alert while the
	// other may still be writing its flight, which an unbuffered pipe would deadlock.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cConn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sConn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// A deadline so that a side waiting on one that gave up fails the test instead of
	// hanging it; never reached when both sides behave.
	deadline := time.Now().Add(30 * time.Second)
	_ = sConn.SetDeadline(deadline)
	_ = cConn.SetDeadline(deadline)

	srv := tls.Server(sConn, &tls.Config{
		Certificates: []tls.Certificate{pair(server)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool(serverTrusts),
		MinVersion:   version,
		MaxVersion:   version,
		Time:         func() time.Time { return now },
	})
	done := make(chan error, 1)
	go func() {
		defer srv.Close()
		if err := srv.Handshake(); err != nil {
			done <- err
			return
		}
		_, err := io.WriteString(srv, srv.ConnectionState().PeerCertificates[0].Subject.CommonName)
		done <- err
	}()

	clientPair := pair(client)
	cli := tls.Client(cConn, &tls.Config{
		// Sent whatever CAs the server names, as an intruder would: the server's own
		// verification must refuse it.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &clientPair, nil },
		RootCAs:              pool(clientTrusts),
		ServerName:           serverName,
		MinVersion:           version,
		MaxVersion:           version,
		Time:                 func() time.Time { return now },
	})
	clientErr = cli.Handshake()
	if clientErr == nil {
		// With TLS 1.3 the server judges the client's certificate after the client's
		// handshake returns: the client only knows once it reads.
		var got []byte
		got, clientErr = io.ReadAll(cli)
		if clientErr == nil && string(got) != client.Cert.Subject.CommonName {
			t.Errorf("the server saw the client as %q, want %q", got, client.Cert.Subject.CommonName)
		}
	}
	cli.Close()
	return <-done, clientErr
}

// errorSays says whether err is an error whose text holds s.
func errorSays(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}
