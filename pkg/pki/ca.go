package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// clockSkew is how far NotBefore is set before the time of issue: a member on a node whose
// clock runs a little behind the operator's must not find a fresh certificate not yet valid.
const clockSkew = 5 * time.Minute

// KeyPair is a certificate and its private key, parsed and in PEM.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Usage is a set of the authentications a leaf is issued for.
type Usage uint8

// The authentications a leaf can be issued for, as its extended key usages.
const (
	// ServerAuth lets the certificate serve a TLS port.
	ServerAuth Usage = 1 << iota
	// ClientAuth lets the certificate authenticate a TLS client.
	ClientAuth
)

// allUsages is every Usage bit defined.
const allUsages = ServerAuth | ClientAuth

// Request is what Issue puts in a leaf.
type Request struct {
	// CommonName is the subject's CN: etcd takes it as the user of a client certificate.
	CommonName string
	// DNSNames and IPs are the subject alternative names, the names a server certificate is
	// valid for. Client certificates carry none: etcd checks a client certificate's names
	// against the address it connects from.
	DNSNames []string
	IPs      []net.IP
	// Usages is what the leaf may authenticate: at least one.
	Usages Usage
	// Lifetime is how long the leaf is valid from now, cut short by the CA's expiry.
	Lifetime time.Duration
}

// NewCA makes a self-signed CA that signs leaves only (path length 0), valid from a little
// before now for lifetime.
func NewCA(commonName string, lifetime time.Duration, now time.Time) (KeyPair, error) {
	if commonName == "" {
		return KeyPair{}, errors.New("making CA: empty common name")
	}
	if lifetime <= 0 {
		return KeyPair{}, fmt.Errorf("making CA %q: lifetime %s is not positive", commonName, lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("making CA %q: generating key: %w", commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, fmt.Errorf("making CA %q: %w", commonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew).UTC(),
		NotAfter:              now.Add(lifetime).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		// SubjectKeyId is left for x509.CreateCertificate to derive from the key, as it
		// does for every CA; leaves get it as their AuthorityKeyId.
	}
	kp, err := sign(tmpl, tmpl, key, key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("making CA %q: %w", commonName, err)
	}
	return kp, nil
}

// Issue makes a leaf for r signed by ca. The leaf is valid from a little before now (not
// before the CA) for r.Lifetime, and never after the CA: a chain is only as valid as its
// shortest-lived certificate, and a leaf that claimed more would be renewed too late.
func Issue(ca KeyPair, r Request, now time.Time) (KeyPair, error) {
	if err := checkIssuer(ca, now); err != nil {
		return KeyPair{}, fmt.Errorf("issuing %q: %w", r.CommonName, err)
	}
	if err := checkRequest(r); err != nil {
		return KeyPair{}, fmt.Errorf("issuing %q: %w", r.CommonName, err)
	}
	notBefore := now.Add(-clockSkew)
	if notBefore.Before(ca.Cert.NotBefore) {
		notBefore = ca.Cert.NotBefore
	}
	notAfter := now.Add(r.Lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("issuing %q: generating key: %w", r.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, fmt.Errorf("issuing %q: %w", r.CommonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: r.CommonName},
		DNSNames:              append([]string(nil), r.DNSNames...),
		IPAddresses:           append([]net.IP(nil), r.IPs...),
		NotBefore:             notBefore.UTC(),
		NotAfter:              notAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           extKeyUsages(r.Usages),
		BasicConstraintsValid: true,
		AuthorityKeyId:        ca.Cert.SubjectKeyId,
	}
	kp, err := sign(tmpl, ca.Cert, key, ca.Key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("issuing %q: %w", r.CommonName, err)
	}
	return kp, nil
}

// checkIssuer refuses a CA that cannot sign a leaf valid now.
func checkIssuer(ca KeyPair, now time.Time) error {
	switch {
	case ca.Cert == nil || ca.Key == nil:
		return errors.New("the CA has no certificate or no key")
	case !ca.Cert.IsCA:
		return fmt.Errorf("%q is not a CA", ca.Cert.Subject.CommonName)
	case now.Before(ca.Cert.NotBefore):
		return fmt.Errorf("the CA is not valid before %s", ca.Cert.NotBefore.UTC().Format(time.RFC3339))
	case !now.Before(ca.Cert.NotAfter):
		return fmt.Errorf("the CA expired at %s", ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkRequest refuses a request that would make a leaf no one can use.
func checkRequest(r Request) error {
	switch {
	case r.CommonName == "":
		return errors.New("empty common name")
	case r.Lifetime <= 0:
		return fmt.Errorf("lifetime %s is not positive", r.Lifetime)
	case r.Usages == 0:
		return errors.New("no usage")
	case r.Usages&^allUsages != 0:
		return fmt.Errorf("unknown usage bits %#x", uint8(r.Usages&^allUsages))
	}
	for _, n := range r.DNSNames {
		if n == "" {
			return errors.New("empty DNS name")
		}
	}
	return nil
}

// extKeyUsages turns u into the extended key usages of a leaf.
func extKeyUsages(u Usage) []x509.ExtKeyUsage {
	var out []x509.ExtKeyUsage
	if u&ServerAuth != 0 {
		out = append(out, x509.ExtKeyUsageServerAuth)
	}
	if u&ClientAuth != 0 {
		out = append(out, x509.ExtKeyUsageClientAuth)
	}
	return out
}

// sign makes the certificate tmpl for key, signed by parent's signer, and encodes both.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (KeyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return KeyPair{}, fmt.Errorf("parsing the certificate just signed: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		// The error of a marshaller is about the key's type, never its value; still, it is
		// not passed on, so no future version can put key material in a message.
		return KeyPair{}, errors.New("encoding the new key as PKCS#8 failed")
	}
	return KeyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// newSerial draws a random, positive 128-bit serial number: unpredictable, and never the
// same twice for one CA, as RFC 5280 asks.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("drawing a serial number: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// RenewAt is when c should be replaced: two thirds into its validity (see the package doc).
func RenewAt(c *x509.Certificate) time.Time {
	// d - d/3 rather than d*2/3: a validity near the 292 years a Duration holds (Sub
	// saturates there) must not overflow into a time before NotBefore.
	d := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(d - d/3)
}
