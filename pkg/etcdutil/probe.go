package etcdutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// TLSProbe asks a member's TLS port (its peer port, or its client port) at baseURL
// (https://host:port) for /version, presenting cert as its client certificate, and returns
// the certificates the port served (its leaf first, then any intermediates), whether or not
// it then answered. Its error says why the port did
// not answer: no connection, a served certificate that roots does not verify for serverName,
// or a client certificate the port refused (etcd checks it against the CAs it trusts). A CA
// rotation (pkg/cluster) learns from it what a running member trusts and serves: etcd reads
// its trusted CAs only when it starts, and its key pair on every connection
// (docs/tls-reload.md). It never reads a member's data.
type TLSProbe func(ctx context.Context, baseURL string, cert tls.Certificate, roots *x509.CertPool, serverName string) ([]*x509.Certificate, error)

var _ TLSProbe = ProbeTLS

// ProbeTLS is the TLSProbe that dials the member.
func ProbeTLS(ctx context.Context, baseURL string, cert tls.Certificate, roots *x509.CertPool, serverName string) ([]*x509.Certificate, error) {
	var served []*x509.Certificate
	verify := verifyServerName(serverName, roots)
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified below, against serverName: the port is dialled at its pod IP.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			served = cs.PeerCertificates
			return verify(cs)
		},
		// Always presented, whatever CAs the port names in its request: a port that does not
		// trust the certificate's CA must refuse it, not get none.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/version", nil)
	if err != nil {
		return nil, fmt.Errorf("probing %s: %w", baseURL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return served, fmt.Errorf("probing %s: %w", baseURL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	// The body is read so that a refusal sent after the handshake (TLS 1.3 sends the server's
	// verdict on the client certificate after the client's handshake is done) is seen here.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case err != nil:
		return served, fmt.Errorf("probing %s: %w", baseURL, err)
	case resp.StatusCode != http.StatusOK:
		return served, fmt.Errorf("probing %s: %s", baseURL, resp.Status)
	case !strings.Contains(string(body), "etcd"):
		return served, fmt.Errorf("probing %s: the port does not answer as etcd does", baseURL)
	}
	return served, nil
}

// unwrapURLError drops net/http's "Get <url>:" prefix, which the caller says already.
func unwrapURLError(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}
