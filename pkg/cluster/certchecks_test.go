package cluster

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// A certificate checked good is not verified again while nothing it was checked with changed
// and every certificate of its chain is valid; what Check would answer otherwise is answered:
// a leaf past its expiry, a CA past its own, a name the leaf lacks, a time before the leaf is
// valid. An entry no check asks for is dropped after a while.
func TestCertChecksRememberOnlyWhatHolds(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ca, err := pki.NewCA("ca", 30*24*time.Hour, start)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.Issue(ca, pki.Request{CommonName: "m", DNSNames: []string{"demo-0.ns.svc"}, Usages: pki.ServerAuth,
		Lifetime: 10 * 24 * time.Hour}, start)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"demo-0.ns.svc"}
	var k certChecks
	check := func(names []string, caPEM []byte, now time.Time) (*pki.Problem, bool) {
		t.Helper()
		first, p := k.check(leaf.CertPEM, leaf.KeyPEM, caPEM, names, pki.ServerAuth, now)
		if p != nil {
			return p, false
		}
		again, _ := k.check(leaf.CertPEM, leaf.KeyPEM, caPEM, names, pki.ServerAuth, now)
		return nil, first == again
	}

	if p, remembered := check(names, ca.CertPEM, start.Add(time.Hour)); p != nil || !remembered {
		t.Errorf("a good leaf: problem %v, remembered %v; want it good and remembered", p, remembered)
	}
	if p, _ := check(append(names, "demo-1.ns.svc"), ca.CertPEM, start.Add(time.Hour)); p == nil || p.Reason != pki.ReasonMissingNames {
		t.Errorf("a name the leaf lacks: problem %v, want MissingNames", p)
	}
	if p, _ := check(names, ca.CertPEM, start.Add(-time.Hour)); p == nil || p.Reason != pki.ReasonNotYetValid {
		t.Errorf("before the leaf is valid: problem %v, want NotYetValid", p)
	}
	if p, _ := check(names, ca.CertPEM, start.Add(11*24*time.Hour)); p == nil || p.Reason != pki.ReasonExpired {
		t.Errorf("past the leaf's expiry: problem %v, want Expired", p)
	}

	// A bundle with a CA that expires before the leaf: the window ends with that CA, so past
	// it the leaf is checked again (good through its own CA), and not remembered.
	short, err := pki.NewCA("short", 24*time.Hour, start)
	if err != nil {
		t.Fatal(err)
	}
	bundle := pki.Bundle(short.CertPEM, ca.CertPEM)
	if p, remembered := check(names, bundle, start.Add(time.Hour)); p != nil || !remembered {
		t.Errorf("a bundle of valid CAs: problem %v, remembered %v", p, remembered)
	}
	if p, remembered := check(names, bundle, start.Add(2*24*time.Hour)); p != nil || remembered {
		t.Errorf("past a CA of the bundle: problem %v, remembered %v; want good, checked again each time", p, remembered)
	}

	first, _ := k.check(leaf.CertPEM, leaf.KeyPEM, ca.CertPEM, names, pki.ServerAuth, start.Add(2*time.Hour))
	k.check(leaf.CertPEM, leaf.KeyPEM, bundle, names, pki.ServerAuth, start.Add(2*time.Hour+2*certCheckKeep))
	k.check(leaf.CertPEM, leaf.KeyPEM, bundle, names, pki.ServerAuth, start.Add(2*time.Hour+4*certCheckKeep))
	if later, _ := k.check(leaf.CertPEM, leaf.KeyPEM, ca.CertPEM, names, pki.ServerAuth, start.Add(2*time.Hour+4*certCheckKeep)); later == first {
		t.Error("an entry no check asked for over two periods is still remembered")
	}
}
