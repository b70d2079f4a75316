package etcdutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/credentials"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// tlsConfig is the TLS configuration a client of conn dials with: nil for plaintext, else a
// copy of conn.TLS that checks certificates against conn.ServerName when it is set.
func tlsConfig(conn ConnConfig) *tls.Config {
	if conn.TLS == nil {
		return nil
	}
	cfg := conn.TLS.Clone()
	if conn.ServerName != "" {
		cfg.ServerName = conn.ServerName
		// gRPC sets the handshake's server name to each address's host (a pod IP), whatever
		// the configuration says, so the name is checked here instead: the chain against
		// RootCAs and the leaf against conn.ServerName, as crypto/tls itself would.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyServerName(conn.ServerName, cfg.RootCAs)
	}
	return cfg
}

// verifyServerName checks a server's certificate chain against roots (nil: the system's) and
// its leaf against name, whatever name the handshake was started with.
func verifyServerName(name string, roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			DNSName: name, Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
}

// open makes an etcd client that logs nothing, with the factory's dial options: it retries
// connecting quickly (gRPC's default backoff grows to two minutes, which would leave a
// long-lived client, member-init's, blind long after a member came back) and reads without a
// buffer of its own.
func (f *factory) open(endpoints []string, conn ConnConfig) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("creating etcd client: no endpoints")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: f.dialTimeout,
		TLS:         tlsConfig(conn),
		Logger:      zap.NewNop(),
		DialOptions: f.dialOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %s: %w", strings.Join(endpoints, ","), err)
	}
	return cli, nil
}

// dialMember makes a connection to the member at endpoint alone, with the client's settings
// (scheme, TLS, reconnect backoff). It connects on its first call, not here.
func (f *factory) dialMember(endpoint string, conn ConnConfig) (*grpc.ClientConn, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not a URL with a host", endpoint)
	}
	creds := insecure.NewCredentials()
	if u.Scheme == "https" {
		creds = credentials.NewTransportCredential(tlsConfig(conn))
	}
	cc, err := grpc.NewClient("passthrough:///"+u.Host, append(f.dialOptions(), grpc.WithTransportCredentials(creds))...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	return cc, nil
}

// dialOptions are those of every connection the factory's clients make, balanced (open) or
// to one member (dialMember), in the operator, member-init and the backup agent alike.
//
// The connections carry small requests and answers only (a Client has no bulk call; the
// snapshot stream has a client of its own, OpenSnapshot), and the operator keeps several per
// cluster, idle between passes, for as long as it runs. gRPC gives each connection a read
// buffer that a connection over TLS holds from its handshake to its close, a large part of
// what a kept connection costs. Without it, gRPC reads each frame straight from the
// connection: over TLS, from the buffer crypto/tls keeps anyway; in plaintext, at the cost
// of a read call per frame header and payload, nothing at this traffic. The write buffer
// stays gRPC's: this gRPC shares it between connections and takes it back once written, so
// an idle connection holds none, and without it every frame would be written (and, over
// TLS, sealed in a record) on its own.
func (f *factory) dialOptions() []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithConnectParams(f.connectParams()), grpc.WithReadBufferSize(0)}
	if f.dial != nil {
		opts = append(opts, grpc.WithContextDialer(f.dial))
	}
	return opts
}

// connectParams retry connecting quickly: gRPC's default backoff grows to two minutes.
func (f *factory) connectParams() grpc.ConnectParams {
	return grpc.ConnectParams{
		Backoff: backoff.Config{
			BaseDelay:  100 * time.Millisecond,
			Multiplier: 1.6,
			Jitter:     0.2,
			MaxDelay:   f.callTimeout,
		},
		MinConnectTimeout: f.dialTimeout,
	}
}
