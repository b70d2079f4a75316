package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// CA is a certificate authority of a test: what it issues is written as PEM files into a
// directory of the test, where etcd and clients read them as they would a mounted Secret.
type CA struct {
	// CertFile is the CA's certificate.
	CertFile string

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// NewCA makes a self-signed CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("making CA %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parsing CA %s: %v", name, err)
	}
	ca := &CA{cert: cert, key: key, dir: t.TempDir()}
	ca.CertFile = ca.write(t, name+"-ca.crt", "CERTIFICATE", der)
	return ca
}

// Issue writes a certificate named name, signed by ca, for the given usages and hosts (DNS
// names or IP addresses; none for a client certificate), and its key. It returns their files.
func (ca *CA) Issue(t testing.TB, name string, usages []x509.ExtKeyUsage, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("issuing %s: %v", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("encoding the key of %s: %v", name, err)
	}
	return ca.write(t, name+".crt", "CERTIFICATE", der), ca.write(t, name+".key", "EC PRIVATE KEY", keyDER)
}

// IssueClient writes a client certificate without names, as the operator issues them.
func (ca *CA) IssueClient(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	return ca.Issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
}

// ServeClientTLS has a member serve its client URL over https, with a server certificate of
// server for the URL's host, and accept only clients whose certificates clients signed. The
// member's ClientURL stays http: HTTPS gives the URL to dial.
func ServeClientTLS(t testing.TB, server, clients *CA) func(*embed.Config) {
	t.Helper()
	return func(cfg *embed.Config) {
		for _, urls := range [][]url.URL{cfg.ListenClientUrls, cfg.AdvertiseClientUrls} {
			for i := range urls {
				urls[i].Scheme = "https"
			}
		}
		host := cfg.ListenClientUrls[0].Hostname()
		cert, key := server.Issue(t, cfg.Name+"-server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, host)
		cfg.ClientTLSInfo.CertFile = cert
		cfg.ClientTLSInfo.KeyFile = key
		cfg.ClientTLSInfo.TrustedCAFile = clients.CertFile
		cfg.ClientTLSInfo.ClientCertAuth = true
	}
}

// HTTPS is the URL u with the https scheme: a member's ClientURL once it serves TLS.
func HTTPS(u string) string { return "https://" + strings.TrimPrefix(u, "http://") }

func (ca *CA) write(t testing.TB, name, blockType string, der []byte) string {
	t.Helper()
	file := filepath.Join(ca.dir, name)
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatalf("writing %s: %v", file, err)
	}
	return file
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating a key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		t.Fatalf("picking a serial number: %v", err)
	}
	return n
}
