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

// A leaf that a root signed through an intermediate is the root's when the intermediate
// follows it, as in a user's tls.crt; not when the intermediate is missing, nor another
// root's.
func TestSignedByThroughIntermediates(t *testing.T) {
	rootKey, midKey, leafKey := ecKey(t), ecKey(t), ecKey(t)
	root := cert{caTemplate("root", 1), rootKey}
	rootPEM, rootCert := signBy(t, root, nil)
	mid := cert{caTemplate("intermediate", 0), midKey}
	midPEM, _ := signBy(t, mid, &root)
	leafPEM, _ := signBy(t, cert{leafTemplate("chained", "example-0.default.svc"), leafKey}, &mid)
	other := mustCA(t, "other")
	roots := []*x509.Certificate{other.Cert, rootCert}
	if got := SignedBy(Bundle(leafPEM, midPEM), roots); got != Fingerprint(rootCert) {
		t.Errorf("leaf then intermediate: SignedBy = %q, want the root's %q", got, Fingerprint(rootCert))
	}
	if got := SignedBy(leafPEM, roots); got != "" {
		t.Errorf("leaf without its intermediate: SignedBy = %q, want none", got)
	}
	if got := SignedBy(Bundle(leafPEM, midPEM), []*x509.Certificate{other.Cert}); got != "" {
		t.Errorf("another root: SignedBy = %q, want none", got)
	}
	if got := SignedBy(Bundle(leafPEM, midPEM, rootPEM), []*x509.Certificate{rootCert}); got != Fingerprint(rootCert) {
		t.Errorf("the root in the chain too: SignedBy = %q, want the root's", got)
	}
	if got := ChainSignedBy(nil, roots); got != "" {
		t.Errorf("no chain: %q", got)
	}
}
