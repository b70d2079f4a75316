package pki

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

// A bundle's fingerprints are a set: sorted, each CA once, whatever the bundle's order; a
// leaf is told apart by the CA whose key signed it.
func TestFingerprintsAndSignedBy(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	oldCA, err := NewCA("old", 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := NewCA("new", 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	a := Fingerprints(Bundle(oldCA.CertPEM, newCA.CertPEM, oldCA.CertPEM))
	b := Fingerprints(Bundle(newCA.CertPEM, oldCA.CertPEM))
	if len(a) != 2 || !slices.Equal(a, b) || !slices.IsSorted(a) {
		t.Errorf("fingerprints %v and %v, want the same two, sorted", a, b)
	}
	if Fingerprint(oldCA.Cert) == Fingerprint(newCA.Cert) {
		t.Error("two CAs share a fingerprint")
	}
	if got := Fingerprints([]byte("no PEM here")); got != nil {
		t.Errorf("fingerprints of no certificate: %v", got)
	}
	leaf, err := Issue(newCA, Request{CommonName: "m", DNSNames: []string{"m"}, Usages: ServerAuth, Lifetime: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := SignedBy(leaf.CertPEM, []*x509.Certificate{oldCA.Cert, newCA.Cert}); got != Fingerprint(newCA.Cert) {
		t.Errorf("SignedBy = %q, want the new CA's %q", got, Fingerprint(newCA.Cert))
	}
	if got := SignedBy(leaf.CertPEM, []*x509.Certificate{oldCA.Cert}); got != "" {
		t.Errorf("SignedBy the old CA alone = %q, want none", got)
	}
}
