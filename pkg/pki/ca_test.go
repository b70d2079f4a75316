package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewCA(t *testing.T) {
	ca := mustCA(t, "example-peer-ca")
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid {
		t.Errorf("IsCA %v, BasicConstraintsValid %v; want a CA", c.IsCA, c.BasicConstraintsValid)
	}
	if c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("MaxPathLen %d, MaxPathLenZero %v; want 0, true: the CA signs leaves only", c.MaxPathLen, c.MaxPathLenZero)
	}
	if want := x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature; c.KeyUsage != want {
		t.Errorf("KeyUsage %b, want %b", c.KeyUsage, want)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %v: want positive and at most 128 bits", c.SerialNumber)
	}
	if len(c.SubjectKeyId) != 20 {
		t.Errorf("SubjectKeyId %x: want 20 bytes", c.SubjectKeyId)
	}
	if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T: want ECDSA P-256", c.PublicKey)
	}
	if c.Subject.CommonName != "example-peer-ca" {
		t.Errorf("CN %q", c.Subject.CommonName)
	}
	if !c.NotBefore.Equal(now.Add(-clockSkew)) || !c.NotAfter.Equal(now.Add(year)) {
		t.Errorf("valid %s to %s, want %s to %s", c.NotBefore, c.NotAfter, now.Add(-clockSkew), now.Add(year))
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	// The PEM is what the Secret keeps: it must read back as the same pair.
	back, err := ParseKeyPair(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatalf("ParseKeyPair of NewCA's PEM: %v", err)
	}
	if !back.Cert.Equal(c) {
		t.Error("CertPEM is not the certificate")
	}
	if other := mustCA(t, "example-peer-ca"); other.Cert.SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Error("two CAs drew the same serial number")
	}
}

func TestNewCARefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		cn       string
		lifetime time.Duration
	}{
		"empty name":    {"", year},
		"zero lifetime": {"ca", 0},
		"negative":      {"ca", -time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewCA(tc.cn, tc.lifetime, now); err == nil {
				t.Error("NewCA made a CA")
			}
		})
	}
}

func TestIssue(t *testing.T) {
	ca := mustCA(t, "ca")
	for name, tc := range map[string]struct {
		usages Usage
		want   []x509.ExtKeyUsage
	}{
		"server": {ServerAuth, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		"client": {ClientAuth, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		"peer":   {ServerAuth | ClientAuth, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
	} {
		t.Run(name, func(t *testing.T) {
			r := memberRequest()
			r.Usages = tc.usages
			kp := mustIssue(t, ca, r)
			c := kp.Cert
			if !slices.Equal(c.ExtKeyUsage, tc.want) {
				t.Errorf("ExtKeyUsage %v, want %v", c.ExtKeyUsage, tc.want)
			}
			if c.KeyUsage != x509.KeyUsageDigitalSignature {
				t.Errorf("KeyUsage %b, want DigitalSignature", c.KeyUsage)
			}
			if c.IsCA {
				t.Error("a leaf is a CA")
			}
			if !bytes.Equal(c.AuthorityKeyId, ca.Cert.SubjectKeyId) {
				t.Errorf("AuthorityKeyId %x, want the CA's SubjectKeyId %x", c.AuthorityKeyId, ca.Cert.SubjectKeyId)
			}
			if c.Subject.CommonName != r.CommonName || !slices.Equal(c.DNSNames, r.DNSNames) ||
				len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
				t.Errorf("subject %q, DNS %v, IPs %v; want %q, %v, [127.0.0.1]", c.Subject.CommonName, c.DNSNames, c.IPAddresses, r.CommonName, r.DNSNames)
			}
			if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
				t.Errorf("public key %T: want ECDSA P-256", c.PublicKey)
			}
			if err := c.CheckSignatureFrom(ca.Cert); err != nil {
				t.Errorf("not signed by the CA: %v", err)
			}
			if _, err := ParseKeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
				t.Errorf("ParseKeyPair of Issue's PEM: %v", err)
			}
		})
	}
}

// TestIssueValidity: a leaf lives r.Lifetime from a little before now, inside its CA's
// validity at both ends.
func TestIssueValidity(t *testing.T) {
	ca, err := NewCA("ca", 10*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		at         time.Time
		lifetime   time.Duration
		from, till time.Time
	}{
		"inside the CA":        {now.Add(time.Hour), time.Hour, now.Add(time.Hour - clockSkew), now.Add(2 * time.Hour)},
		"capped by the CA":     {now.Add(time.Hour), 100 * time.Hour, now.Add(time.Hour - clockSkew), ca.Cert.NotAfter},
		"not before the CA":    {now, time.Hour, ca.Cert.NotBefore, now.Add(time.Hour)},
		"just before it ends":  {ca.Cert.NotAfter.Add(-time.Second), time.Hour, ca.Cert.NotAfter.Add(-time.Second - clockSkew), ca.Cert.NotAfter},
		"issued as CA is made": {ca.Cert.NotBefore, time.Hour, ca.Cert.NotBefore, ca.Cert.NotBefore.Add(time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			r := memberRequest()
			r.Lifetime = tc.lifetime
			kp, err := Issue(ca, r, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if !kp.Cert.NotBefore.Equal(tc.from) || !kp.Cert.NotAfter.Equal(tc.till) {
				t.Errorf("valid %s to %s, want %s to %s", kp.Cert.NotBefore, kp.Cert.NotAfter, tc.from, tc.till)
			}
		})
	}
}

func TestIssueRefuses(t *testing.T) {
	ca := mustCA(t, "ca")
	leaf := mustIssue(t, ca, memberRequest())
	for name, tc := range map[string]struct {
		ca   KeyPair
		edit func(*Request)
		at   time.Time
		want string
	}{
		"no CA":            {KeyPair{}, nil, now, "no certificate"},
		"a leaf as CA":     {leaf, nil, now, "not a CA"},
		"CA expired":       {ca, nil, ca.Cert.NotAfter, "expired"},
		"CA not yet valid": {ca, nil, ca.Cert.NotBefore.Add(-time.Second), "not valid before"},
		"no common name":   {ca, func(r *Request) { r.CommonName = "" }, now, "common name"},
		"no lifetime":      {ca, func(r *Request) { r.Lifetime = 0 }, now, "lifetime"},
		"no usage":         {ca, func(r *Request) { r.Usages = 0 }, now, "no usage"},
		"unknown usage":    {ca, func(r *Request) { r.Usages = ServerAuth | 1<<5 }, now, "unknown usage"},
		"empty DNS name":   {ca, func(r *Request) { r.DNSNames = append(r.DNSNames, "") }, now, "empty DNS name"},
		"key not the CA's": {KeyPair{Cert: ca.Cert, Key: leaf.Key}, nil, now, "match"},
	} {
		t.Run(name, func(t *testing.T) {
			r := memberRequest()
			if tc.edit != nil {
				tc.edit(&r)
			}
			_, err := Issue(tc.ca, r, tc.at)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Issue: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestRenewAt(t *testing.T) {
	for name, tc := range map[string]struct {
		from, till, want time.Time
	}{
		"90 days":    {now, now.Add(90 * 24 * time.Hour), now.Add(60 * 24 * time.Hour)},
		"3 hours":    {now, now.Add(3 * time.Hour), now.Add(2 * time.Hour)},
		"backdated":  {now.Add(-3 * time.Hour), now.Add(6 * time.Hour), now.Add(3 * time.Hour)},
		"no time":    {now, now, now},
		"1000 years": {time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(1<<63-1) - time.Duration(1<<63-1)/3)},
	} {
		t.Run(name, func(t *testing.T) {
			got := RenewAt(&x509.Certificate{NotBefore: tc.from, NotAfter: tc.till})
			if !got.Equal(tc.want) {
				t.Errorf("RenewAt = %s, want %s", got, tc.want)
			}
			if got.Before(tc.from) || got.After(tc.till) {
				t.Errorf("RenewAt = %s, outside the validity %s to %s", got, tc.from, tc.till)
			}
		})
	}
	// A leaf as Issue makes it: two thirds of the validity, backdating included.
	kp := mustIssue(t, mustCA(t, "ca"), memberRequest())
	validity := 90*24*time.Hour + clockSkew
	if got, want := RenewAt(kp.Cert), now.Add(-clockSkew).Add(validity*2/3); !got.Equal(want) {
		t.Errorf("RenewAt of an issued leaf = %s, want %s", got, want)
	}
}
