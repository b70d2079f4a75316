package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// now is the time of every test: a fixed instant, as the operator's pass passes its own.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// year is the lifetime of the test CAs.
const year = 365 * 24 * time.Hour

// mustCA makes a CA valid for a year from now.
func mustCA(t *testing.T, cn string) KeyPair {
	t.Helper()
	ca, err := NewCA(cn, year, now)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

// mustIssue issues r from ca at now.
func mustIssue(t *testing.T, ca KeyPair, r Request) KeyPair {
	t.Helper()
	kp, err := Issue(ca, r, now)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return kp
}

// memberRequest is what the operator asks for a member's peer certificate.
func memberRequest() Request {
	return Request{
		CommonName: "example-0",
		DNSNames:   []string{"example-0", "example-0.default", "example-0.default.svc", "example-0.example.default.svc"},
		IPs:        []net.IP{net.ParseIP("127.0.0.1")},
		Usages:     ServerAuth | ClientAuth,
		Lifetime:   90 * 24 * time.Hour,
	}
}

// memberNames are the names memberRequest's leaf covers.
var memberNames = []string{"example-0", "example-0.default", "example-0.default.svc", "example-0.example.default.svc", "127.0.0.1"}

// ecKey, rsaKey and edKey make keys of each kind a user's Secret may hold.
func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func edKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// pemOf encodes der as one PEM block of type typ.
func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// pkcs8 encodes key as PKCS#8 PEM.
func pkcs8(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("PRIVATE KEY", der)
}

// sec1 encodes an EC key as openssl does: SEC 1, after its curve's parameters block.
func sec1(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	params := pemOf("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07})
	return append(params, pemOf("EC PRIVATE KEY", der)...)
}

// pkcs1 encodes an RSA key as PKCS#1 PEM.
func pkcs1(key *rsa.PrivateKey) []byte {
	return pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
}

// cert is a certificate a test builds by hand, for what Issue does not make: other key
// types, intermediates, wildcards, odd usages.
type cert struct {
	tmpl *x509.Certificate
	key  crypto.Signer
}

// leafTemplate is a leaf template valid for a year around now.
func leafTemplate(cn string, dns ...string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		DNSNames:              dns,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(year),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
}

// caTemplate is a CA template valid for a year around now that may sign pathLen CAs below it.
func caTemplate(cn string, pathLen int) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(year),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            pathLen,
		MaxPathLenZero:        pathLen == 0,
	}
}

// signBy signs c by parent (c itself when parent is nil) and returns its PEM and parsed form.
func signBy(t *testing.T, c cert, parent *cert) ([]byte, *x509.Certificate) {
	t.Helper()
	if parent == nil {
		parent = &c
	}
	der, err := x509.CreateCertificate(rand.Reader, c.tmpl, parent.tmpl, c.key.Public(), parent.key)
	if err != nil {
		t.Fatalf("signing %s: %v", c.tmpl.Subject.CommonName, err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("CERTIFICATE", der), parsed
}

// serial is a fresh serial number for a hand-built certificate.
func serial() *big.Int {
	n, err := newSerial()
	if err != nil {
		panic(err)
	}
	return n
}
