package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"strings"
	"testing"
	"time"
)

// checkCase is one Check of a table: the inputs, and the reason of the Problem expected ("" for
// none) with words its message must hold.
type checkCase struct {
	cert, key, ca []byte
	names         []string
	usages        Usage
	at            time.Time
	want          string
	says          []string
}

func TestCheck(t *testing.T) {
	ca, other := mustCA(t, "ca"), mustCA(t, "other")
	peer := mustIssue(t, ca, memberRequest())
	serverReq := memberRequest()
	serverReq.Usages = ServerAuth
	server := mustIssue(t, ca, serverReq)
	foreign := mustIssue(t, other, memberRequest())
	client := mustIssue(t, ca, Request{CommonName: "example-client", Usages: ClientAuth, Lifetime: time.Hour})

	// A user's CA with an intermediate, as cert-manager's CA issuer chained to a root makes
	// them; and an intermediate that may only sign server certificates.
	rootKey, midKey, leafKey := ecKey(t), ecKey(t), ecKey(t)
	root := cert{caTemplate("root", 1), rootKey}
	rootPEM, _ := signBy(t, root, nil)
	mid := cert{caTemplate("intermediate", 0), midKey}
	midPEM, _ := signBy(t, mid, &root)
	chainLeafPEM, _ := signBy(t, cert{leafTemplate("chained", "example-0.default.svc"), leafKey}, &mid)
	serverMidTmpl := caTemplate("server-only intermediate", 0)
	serverMidTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	serverMid := cert{serverMidTmpl, midKey}
	serverMidPEM, _ := signBy(t, serverMid, &root)
	serverMidLeafPEM, _ := signBy(t, cert{leafTemplate("under a server-only CA", "example-0.default.svc"), leafKey}, &serverMid)

	// Leaves a user may bring that Issue does not make.
	caCert := cert{caTemplate("user ca", 0), rootKey}
	userCAPEM, _ := signBy(t, caCert, nil)
	rsaK, edK := rsaKey(t), edKey(t)
	rsaLeaf, _ := signBy(t, cert{leafTemplate("rsa", "example-0.default.svc"), rsaK}, &caCert)
	edLeaf, _ := signBy(t, cert{leafTemplate("ed", "example-0.default.svc"), edK}, &caCert)
	wildcard, _ := signBy(t, cert{leafTemplate("wildcard", "*.default.svc", "*.example.default.svc"), leafKey}, &caCert)
	noEKUTmpl := leafTemplate("no extended key usage", "example-0.default.svc")
	noEKUTmpl.ExtKeyUsage = nil
	noEKU, _ := signBy(t, cert{noEKUTmpl, leafKey}, &caCert)
	anyTmpl := leafTemplate("any usage", "example-0.default.svc")
	anyTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageAny}
	anyEKU, _ := signBy(t, cert{anyTmpl, leafKey}, &caCert)
	unknownTmpl := leafTemplate("unknown usage only", "example-0.default.svc")
	unknownTmpl.ExtKeyUsage = nil
	unknownTmpl.UnknownExtKeyUsage = []asn1.ObjectIdentifier{{1, 3, 6, 1, 4, 1, 99999, 1}}
	unknownEKU, _ := signBy(t, cert{unknownTmpl, leafKey}, &caCert)
	leafKeyPEM := pkcs8(t, leafKey)

	// Bundles that hold the CA the operator keeps beside a user's.
	bundle := Bundle(other.CertPEM, ca.CertPEM)

	cases := map[string]checkCase{
		// What works.
		"issued peer leaf":           {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, names: memberNames, usages: ServerAuth | ClientAuth},
		"CA in a bundle":             {cert: peer.CertPEM, key: peer.KeyPEM, ca: bundle, names: memberNames, usages: ServerAuth | ClientAuth},
		"no names asked":             {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, usages: ClientAuth},
		"names differ in case":       {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, names: []string{"Example-0.Default.SVC"}, usages: ServerAuth},
		"server leaf served":         {cert: server.CertPEM, key: server.KeyPEM, ca: ca.CertPEM, names: memberNames, usages: ServerAuth},
		"chain through intermediate": {cert: join(chainLeafPEM, midPEM), key: leafKeyPEM, ca: rootPEM, names: []string{"example-0.default.svc"}, usages: ServerAuth | ClientAuth},
		"RSA leaf":                   {cert: rsaLeaf, key: pkcs1(rsaK), ca: userCAPEM, names: []string{"example-0.default.svc"}, usages: ServerAuth | ClientAuth},
		"Ed25519 leaf":               {cert: edLeaf, key: pkcs8(t, edK), ca: userCAPEM, names: []string{"example-0.default.svc"}, usages: ServerAuth | ClientAuth},
		"wildcards cover names":      {cert: wildcard, key: leafKeyPEM, ca: userCAPEM, names: []string{"example-0.default.svc", "example-0.example.default.svc", "example-client.default.svc"}, usages: ServerAuth},
		"no extended key usage":      {cert: noEKU, key: leafKeyPEM, ca: userCAPEM, names: []string{"example-0.default.svc"}, usages: ServerAuth | ClientAuth},
		"extended key usage any":     {cert: anyEKU, key: leafKeyPEM, ca: userCAPEM, names: []string{"example-0.default.svc"}, usages: ServerAuth | ClientAuth},
		"valid at its first instant": {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, usages: ServerAuth, at: peer.Cert.NotBefore},
		"valid at its last instant":  {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, usages: ServerAuth, at: peer.Cert.NotAfter},

		// MissingKey, each input in turn.
		"tls.crt empty": {cert: nil, key: peer.KeyPEM, ca: ca.CertPEM, want: ReasonMissingKey, says: []string{"tls.crt"}},
		"tls.key empty": {cert: peer.CertPEM, key: []byte(" \n"), ca: ca.CertPEM, want: ReasonMissingKey, says: []string{"tls.key"}},
		"ca.crt empty":  {cert: peer.CertPEM, key: peer.KeyPEM, ca: nil, want: ReasonMissingKey, says: []string{"ca.crt"}},

		// BadCertificate and BadKey.
		"tls.crt not PEM":        {cert: []byte("not a certificate"), key: peer.KeyPEM, ca: ca.CertPEM, want: ReasonBadCertificate, says: []string{"tls.crt"}},
		"tls.crt junk":           {cert: pemOf("CERTIFICATE", []byte("junk")), key: peer.KeyPEM, ca: ca.CertPEM, want: ReasonBadCertificate, says: []string{"tls.crt", "does not parse"}},
		"tls.crt holds only key": {cert: peer.KeyPEM, key: peer.KeyPEM, ca: ca.CertPEM, want: ReasonBadCertificate, says: []string{"tls.crt"}},
		"tls.key not a key":      {cert: peer.CertPEM, key: peer.CertPEM, ca: ca.CertPEM, want: ReasonBadKey, says: []string{"tls.key"}},
		"tls.key junk":           {cert: peer.CertPEM, key: pemOf("EC PRIVATE KEY", []byte("junk")), ca: ca.CertPEM, want: ReasonBadKey, says: []string{"tls.key"}},
		"ca.crt junk":            {cert: peer.CertPEM, key: peer.KeyPEM, ca: []byte("junk"), want: ReasonBadCertificate, says: []string{"ca.crt"}},

		// KeyMismatch.
		"another leaf's key": {cert: peer.CertPEM, key: server.KeyPEM, ca: ca.CertPEM, want: ReasonKeyMismatch, says: []string{"tls.key", "example-0"}},

		// NotYetValid and Expired, with the dates.
		"before NotBefore": {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, at: peer.Cert.NotBefore.Add(-time.Second), want: ReasonNotYetValid,
			says: []string{peer.Cert.NotBefore.Format(time.RFC3339), peer.Cert.NotAfter.Format(time.RFC3339)}},
		"after NotAfter": {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, at: peer.Cert.NotAfter.Add(time.Second), want: ReasonExpired,
			says: []string{peer.Cert.NotAfter.Format(time.RFC3339), peer.Cert.NotAfter.Add(time.Second).Format(time.RFC3339)}},

		// Untrusted.
		"another CA's leaf":      {cert: foreign.CertPEM, key: foreign.KeyPEM, ca: ca.CertPEM, want: ReasonUntrusted, says: []string{"ca.crt"}},
		"intermediate missing":   {cert: chainLeafPEM, key: leafKeyPEM, ca: rootPEM, want: ReasonUntrusted},
		"intermediate as the CA": {cert: chainLeafPEM, key: leafKeyPEM, ca: midPEM, names: []string{"example-0.default.svc"}},
		"ca.crt holds a leaf":    {cert: server.CertPEM, key: server.KeyPEM, ca: peer.CertPEM, want: ReasonUntrusted},
		"CA expired":             {cert: peer.CertPEM, key: peer.KeyPEM, ca: shortCA(t, ca), want: ReasonUntrusted},

		// MissingNames, listing each name missing.
		"a name missing": {cert: peer.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, names: append([]string{"example-client.default.svc"}, memberNames...), usages: ServerAuth,
			want: ReasonMissingNames, says: []string{"example-client.default.svc"}},
		"names and an IP missing": {cert: server.CertPEM, key: server.KeyPEM, ca: ca.CertPEM, names: []string{"example-0", "example-1.default.svc", "10.0.0.1"}, usages: ServerAuth,
			want: ReasonMissingNames, says: []string{"example-1.default.svc, 10.0.0.1"}},
		"wildcard covers one label only": {cert: wildcard, key: leafKeyPEM, ca: userCAPEM, names: []string{"default.svc", "a.b.default.svc"},
			want: ReasonMissingNames, says: []string{"default.svc, a.b.default.svc"}},

		// WrongUsage.
		"server leaf as client": {cert: server.CertPEM, key: server.KeyPEM, ca: ca.CertPEM, names: memberNames, usages: ServerAuth | ClientAuth,
			want: ReasonWrongUsage, says: []string{"client authentication", "server authentication"}},
		"client leaf as server": {cert: client.CertPEM, key: client.KeyPEM, ca: ca.CertPEM, usages: ServerAuth,
			want: ReasonWrongUsage, says: []string{"server authentication"}},
		"unknown usage only": {cert: unknownEKU, key: leafKeyPEM, ca: userCAPEM, usages: ClientAuth,
			want: ReasonWrongUsage, says: []string{"1.3.6.1.4.1.99999.1"}},
		"intermediate forbids client": {cert: join(serverMidLeafPEM, serverMidPEM), key: leafKeyPEM, ca: rootPEM, names: []string{"example-0.default.svc"}, usages: ServerAuth | ClientAuth,
			want: ReasonWrongUsage, says: []string{"client authentication", "chain"}},
		"intermediate allows server": {cert: join(serverMidLeafPEM, serverMidPEM), key: leafKeyPEM, ca: rootPEM, names: []string{"example-0.default.svc"}, usages: ServerAuth},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { runCheck(t, tc) })
	}
}

// runCheck runs one case of a Check table.
func runCheck(t *testing.T, tc checkCase) {
	t.Helper()
	at := tc.at
	if at.IsZero() {
		at = now
	}
	leaf, p := Check(tc.cert, tc.key, tc.ca, tc.names, tc.usages, at)
	if tc.want == "" {
		if p != nil {
			t.Fatalf("Check: %s: %s", p.Reason, p.Message)
		}
		if leaf == nil {
			t.Fatal("Check returned neither a leaf nor a Problem")
		}
		return
	}
	if p == nil {
		t.Fatalf("Check passed, want %s", tc.want)
	}
	t.Logf("%s: %s", p.Reason, p.Message)
	if leaf != nil {
		t.Error("Check returned a leaf with its Problem")
	}
	if p.Reason != tc.want {
		t.Errorf("Check: %s (%s), want %s", p.Reason, p.Message, tc.want)
	}
	for _, s := range tc.says {
		if !strings.Contains(p.Message, s) {
			t.Errorf("message %q does not say %q", p.Message, s)
		}
	}
}

// shortCA is a CA with ca's key and name that expired an hour before now: what ca.crt holds
// when the user's CA lapsed before the leaf it signed.
func shortCA(t *testing.T, ca KeyPair) []byte {
	t.Helper()
	tmpl := caTemplate("ca", 0)
	tmpl.Subject = pkix.Name{CommonName: ca.Cert.Subject.CommonName}
	tmpl.SubjectKeyId = ca.Cert.SubjectKeyId
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-2*year), now.Add(-time.Hour)
	pemBytes, _ := signBy(t, cert{tmpl, ca.Key}, nil)
	return pemBytes
}

// TestCheckOrder: with several things wrong, Check names the first in the documented order.
func TestCheckOrder(t *testing.T) {
	ca, other := mustCA(t, "ca"), mustCA(t, "other")
	serverReq := memberRequest()
	serverReq.Usages = ServerAuth
	server := mustIssue(t, other, serverReq)
	peer := mustIssue(t, ca, memberRequest())
	for name, tc := range map[string]checkCase{
		"missing before bad":      {cert: []byte("junk"), key: nil, ca: ca.CertPEM, want: ReasonMissingKey},
		"bad cert before bad key": {cert: []byte("junk"), key: []byte("junk"), ca: ca.CertPEM, want: ReasonBadCertificate},
		"bad key before bad CA":   {cert: server.CertPEM, key: []byte("junk"), ca: []byte("junk"), want: ReasonBadKey},
		"mismatch before expiry":  {cert: server.CertPEM, key: peer.KeyPEM, ca: ca.CertPEM, names: []string{"nowhere"}, usages: ClientAuth, at: server.Cert.NotAfter.Add(time.Hour), want: ReasonKeyMismatch},
		"expiry before trust":     {cert: server.CertPEM, key: server.KeyPEM, ca: ca.CertPEM, names: []string{"nowhere"}, usages: ClientAuth, at: server.Cert.NotAfter.Add(time.Hour), want: ReasonExpired},
		"trust before names":      {cert: server.CertPEM, key: server.KeyPEM, ca: ca.CertPEM, names: []string{"nowhere"}, usages: ClientAuth, want: ReasonUntrusted},
		"names before usage":      {cert: server.CertPEM, key: server.KeyPEM, ca: other.CertPEM, names: []string{"nowhere"}, usages: ClientAuth, want: ReasonMissingNames},
	} {
		t.Run(name, func(t *testing.T) { runCheck(t, tc) })
	}
}

func TestCheckCA(t *testing.T) {
	ca := mustCA(t, "ca")
	leaf := mustIssue(t, ca, memberRequest())
	noSignTmpl := caTemplate("no cert sign", 0)
	noSignTmpl.KeyUsage = x509.KeyUsageDigitalSignature
	k := ecKey(t)
	noSign, _ := signBy(t, cert{noSignTmpl, k}, nil)
	plainTmpl := leafTemplate("no key usage")
	plainTmpl.KeyUsage = 0
	plain, _ := signBy(t, cert{plainTmpl, k}, nil)
	for name, tc := range map[string]struct {
		cert, key []byte
		at        time.Time
		want      string
	}{
		"made by NewCA":       {ca.CertPEM, ca.KeyPEM, now, ""},
		"at its last instant": {ca.CertPEM, ca.KeyPEM, ca.Cert.NotAfter, ""},
		"no certificate":      {nil, ca.KeyPEM, now, ReasonMissingKey},
		"no key":              {ca.CertPEM, nil, now, ReasonMissingKey},
		"certificate junk":    {[]byte("junk"), ca.KeyPEM, now, ReasonBadCertificate},
		"key junk":            {ca.CertPEM, []byte("junk"), now, ReasonBadKey},
		"key of a leaf":       {ca.CertPEM, leaf.KeyPEM, now, ReasonKeyMismatch},
		"not yet valid":       {ca.CertPEM, ca.KeyPEM, ca.Cert.NotBefore.Add(-time.Second), ReasonNotYetValid},
		"expired":             {ca.CertPEM, ca.KeyPEM, ca.Cert.NotAfter.Add(time.Second), ReasonExpired},
		"a leaf":              {leaf.CertPEM, leaf.KeyPEM, now, ReasonWrongUsage},
		"no CA, no key usage": {plain, pkcs8(t, k), now, ReasonWrongUsage},
		"may not sign":        {noSign, pkcs8(t, k), now, ReasonWrongUsage},
	} {
		t.Run(name, func(t *testing.T) {
			kp, p := CheckCA(tc.cert, tc.key, tc.at)
			if tc.want == "" {
				if p != nil {
					t.Fatalf("CheckCA: %s: %s", p.Reason, p.Message)
				}
				if !kp.Cert.Equal(ca.Cert) || kp.Key == nil {
					t.Error("CheckCA did not return the CA")
				}
				// What CheckCA returns can issue.
				if _, err := Issue(kp, memberRequest(), tc.at.Add(-time.Second)); err != nil {
					t.Errorf("Issue from the checked CA: %v", err)
				}
				return
			}
			if p == nil || p.Reason != tc.want {
				t.Errorf("CheckCA: %v, want %s", p, tc.want)
			}
		})
	}
}

// TestProblemError: a Problem is an error whose text is its message.
func TestProblemError(t *testing.T) {
	var err error = &Problem{Reason: ReasonExpired, Message: "tls.crt has expired"}
	if err.Error() != "tls.crt has expired" {
		t.Errorf("Error() = %q", err.Error())
	}
}
