package framework

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// Certificates a test brings, as a user's cert-manager would, made with the operator's own
// pkg/pki. Their private keys stay in the test's memory and in the Secrets it applies: no
// command line, log line or error message of the suite carries one.

// NewTestCA makes a CA of the test's own, valid from two days ago for a month, so that it can
// also sign certificates that have expired or are not valid yet.
func NewTestCA(t testing.TB, name string) pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA(name, 30*24*time.Hour, time.Now().Add(-48*time.Hour))
	if err != nil {
		t.Fatalf("making CA %q: %v", name, err)
	}
	return ca
}

// Cert is what a test's certificate says.
type Cert struct {
	CommonName string
	// Names are the DNS names (or IP literals) it is valid for: none for a client certificate,
	// whose names etcd would check against the address it connects from.
	Names  []string
	Usages pki.Usage
	// Issued is when it is issued (its validity starts a little before, for clock skew):
	// zero for now, in the past for one that has expired, in the future for one not valid yet.
	Issued time.Time
	// Lifetime is how long it is valid; zero for a day.
	Lifetime time.Duration
}

// IssueCert issues c from ca.
func IssueCert(t testing.TB, ca pki.KeyPair, c Cert) pki.KeyPair {
	t.Helper()
	r := pki.Request{CommonName: c.CommonName, Usages: c.Usages, Lifetime: c.Lifetime}
	if r.Lifetime == 0 {
		r.Lifetime = 24 * time.Hour
	}
	for _, n := range c.Names {
		if ip := net.ParseIP(n); ip != nil {
			r.IPs = append(r.IPs, ip)
		} else {
			r.DNSNames = append(r.DNSNames, n)
		}
	}
	at := c.Issued
	if at.IsZero() {
		at = time.Now()
	}
	kp, err := pki.Issue(ca, r, at)
	if err != nil {
		t.Fatalf("issuing %q: %v", c.CommonName, err)
	}
	return kp
}

// TLSSecretData is the data of a Secret in the kubernetes.io/tls layout: leaf and its key,
// and ca, the CA that signed it.
func TLSSecretData(ca, leaf pki.KeyPair) map[string][]byte {
	return map[string][]byte{SecretCA: ca.CertPEM, SecretCert: leaf.CertPEM, SecretKey: leaf.KeyPEM}
}

// ApplySecret creates or updates Secret name in the test namespace with data, as a user's
// cert-manager keeps it: of type kubernetes.io/tls when it has tls.crt and tls.key (the API
// server refuses that type without them; Opaque then). A Secret's type cannot change: a test
// that changes it deletes the Secret first. Applied server-side, so that kubectl keeps no copy
// of the data in an annotation; the manifest goes through kubectl's stdin, which no error
// message quotes.
func (f *Framework) ApplySecret(name string, data map[string][]byte) {
	f.t.Helper()
	typ := "Opaque"
	if len(data[SecretCert]) > 0 && len(data[SecretKey]) > 0 {
		typ = "kubernetes.io/tls"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\ntype: %s\ndata:\n", name, typ)
	for _, k := range slices.Sorted(maps.Keys(data)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, base64.StdEncoding.EncodeToString(data[k]))
	}
	if _, err := f.run(b.String(), "-n", f.Namespace, "apply", "--server-side", "--force-conflicts",
		"--field-manager=e2e-user", "-f", "-"); err != nil {
		f.t.Fatalf("applying secret %s: %v", name, err)
	}
}

// SecretData reads a Secret of the test namespace (through the suite's API proxy). Its error
// never quotes the data.
func (f *Framework) SecretData(name string) (map[string][]byte, error) {
	var s struct {
		Data map[string][]byte `json:"data"`
	}
	if err := f.GetJSON("secret/"+name, &s); err != nil {
		return nil, err
	}
	return s.Data, nil
}

// SecretCertificate is the first certificate of key (a PEM bundle) in Secret name.
func (f *Framework) SecretCertificate(name, key string) (*x509.Certificate, error) {
	data, err := f.SecretData(name)
	if err != nil {
		return nil, err
	}
	certs, err := pki.ParseCertificates(data[key])
	if err != nil {
		return nil, fmt.Errorf("secret %s, %s: %w", name, key, err)
	}
	return certs[0], nil
}
