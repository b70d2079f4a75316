package etcdutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles are the PEM files a client in a member's or a backup's pod dials the members'
// client URLs with: its certificate and key, and the CAs it verifies the members by. The
// members are verified by the names of the URLs dialled (no ConnConfig.ServerName).
type TLSFiles struct {
	CertFile, KeyFile, CAFile string
}

// IsZero reports whether no file is set: the client dials in plaintext.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// Validate checks that the files are all set or none is.
func (f TLSFiles) Validate() error {
	if !f.IsZero() && (f.CertFile == "" || f.KeyFile == "" || f.CAFile == "") {
		return errors.New("a certificate, its key and a CA file go together")
	}
	return nil
}

// ConnConfig loads the files into the ConnConfig a client dials with: a zero one (plaintext)
// when no file is set. The certificate is read again from its files at every handshake, so a
// long-lived client (member-init's wait) presents a renewed one, as etcd serves its own; an
// error here names the files, never their contents.
func (f TLSFiles) ConnConfig() (ConnConfig, error) {
	if f.IsZero() {
		return ConnConfig{}, nil
	}
	if err := f.Validate(); err != nil {
		return ConnConfig{}, err
	}
	if _, err := f.loadCertificate(); err != nil {
		return ConnConfig{}, err
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return ConnConfig{}, fmt.Errorf("reading the CA file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return ConnConfig{}, fmt.Errorf("reading the CA file %s: no PEM certificate in it", f.CAFile)
	}
	return ConnConfig{TLS: &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return f.loadCertificate()
		},
	}}, nil
}

func (f TLSFiles) loadCertificate() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the client certificate %s and its key %s: %w", f.CertFile, f.KeyFile, err)
	}
	return &cert, nil
}

// PEMConnConfig is the ConnConfig of a client that presents the certificate certPEM with its
// key keyPEM, and verifies the members by the CAs of caPEM and against serverName (the client
// Service's name, which their certificates carry, whatever address is dialled): what the
// operator and kubectl etcd build from a cluster's client Secret. An error says what failed
// to parse, never what the PEM holds.
func PEMConnConfig(caPEM, certPEM, keyPEM []byte, serverName string) (ConnConfig, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls names what failed to parse, never the key's bytes.
		return ConnConfig{}, fmt.Errorf("the client certificate and its key: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return ConnConfig{}, errors.New("the CA: no PEM certificate in it")
	}
	return ConnConfig{
		TLS:        &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, MinVersion: tls.VersionTLS12},
		ServerName: serverName,
	}, nil
}
