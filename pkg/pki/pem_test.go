package pki

import (
	"bytes"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
)

func TestParseCertificates(t *testing.T) {
	a, b := mustCA(t, "a"), mustCA(t, "b")
	key := pkcs8(t, ecKey(t))
	for name, tc := range map[string]struct {
		in      []byte
		want    []string // common names, in order
		wantErr bool
	}{
		"one":                  {in: a.CertPEM, want: []string{"a"}},
		"in order":             {in: join(b.CertPEM, a.CertPEM), want: []string{"b", "a"}},
		"other blocks skipped": {in: join(key, a.CertPEM, []byte("text between\n"), b.CertPEM), want: []string{"a", "b"}},
		"empty":                {in: nil, wantErr: true},
		"no certificate":       {in: key, wantErr: true},
		"not PEM":              {in: []byte("hello"), wantErr: true},
		"one does not parse":   {in: join(a.CertPEM, pemOf("CERTIFICATE", []byte("junk"))), wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			certs, err := ParseCertificates(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Errorf("ParseCertificates = %d certificates, want an error", len(certs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range certs {
				got = append(got, c.Subject.CommonName)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("ParseCertificates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBundle(t *testing.T) {
	a, b, c := mustCA(t, "a"), mustCA(t, "b"), mustCA(t, "c")
	withHeader := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Note": "x"}, Bytes: b.Cert.Raw})
	for name, tc := range map[string]struct {
		in   [][]byte
		want []string
	}{
		"nothing":             {nil, nil},
		"one":                 {[][]byte{a.CertPEM}, []string{"a"}},
		"order kept":          {[][]byte{c.CertPEM, a.CertPEM, b.CertPEM}, []string{"c", "a", "b"}},
		"same CA twice":       {[][]byte{a.CertPEM, b.CertPEM, a.CertPEM}, []string{"a", "b"}},
		"twice in one input":  {[][]byte{join(a.CertPEM, b.CertPEM, a.CertPEM), c.CertPEM}, []string{"a", "b", "c"}},
		"a bundle re-bundled": {[][]byte{join(a.CertPEM, b.CertPEM), join(b.CertPEM, c.CertPEM)}, []string{"a", "b", "c"}},
		"same bytes, header":  {[][]byte{b.CertPEM, withHeader}, []string{"b"}},
		"keys left out":       {[][]byte{a.KeyPEM, a.CertPEM, b.KeyPEM}, []string{"a"}},
		"junk left out":       {[][]byte{pemOf("CERTIFICATE", []byte("junk")), a.CertPEM}, []string{"a"}},
		"mislabelled key":     {[][]byte{relabel(a.KeyPEM, "CERTIFICATE"), a.CertPEM}, []string{"a"}},
	} {
		t.Run(name, func(t *testing.T) {
			out := Bundle(tc.in...)
			if bytes.Contains(out, []byte("PRIVATE KEY")) || bytes.Contains(out, []byte("Note")) {
				t.Errorf("the bundle holds more than certificates:\n%s", out)
			}
			var got []string
			if len(out) > 0 {
				certs, err := ParseCertificates(out)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range certs {
					got = append(got, c.Subject.CommonName)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("Bundle = %v, want %v", got, tc.want)
			}
		})
	}
	// A bundle of one CA is byte for byte that CA's PEM: a trust bundle rewritten from the
	// same CAs does not change the Secret.
	if got := Bundle(a.CertPEM, a.CertPEM); !bytes.Equal(got, a.CertPEM) {
		t.Errorf("Bundle(a, a) is not a's PEM")
	}
}

func TestParseKeyPair(t *testing.T) {
	ec, rsa, ed := ecKey(t), rsaKey(t), edKey(t)
	ecCert, _ := signBy(t, cert{leafTemplate("ec"), ec}, nil)
	rsaCert, _ := signBy(t, cert{leafTemplate("rsa"), rsa}, nil)
	edCert, _ := signBy(t, cert{leafTemplate("ed"), ed}, nil)
	ca := mustCA(t, "ca")
	for name, tc := range map[string]struct {
		cert, key []byte
		want      string // the Problem's reason; "" for none
	}{
		"made by NewCA":        {ca.CertPEM, ca.KeyPEM, ""},
		"EC, PKCS#8":           {ecCert, pkcs8(t, ec), ""},
		"EC, SEC 1 (openssl)":  {ecCert, sec1(t, ec), ""},
		"RSA, PKCS#1":          {rsaCert, pkcs1(rsa), ""},
		"RSA, PKCS#8":          {rsaCert, pkcs8(t, rsa), ""},
		"Ed25519, PKCS#8":      {edCert, pkcs8(t, ed), ""},
		"PKCS#8 labelled EC":   {ecCert, relabel(pkcs8(t, ec), "EC PRIVATE KEY"), ""},
		"chain after the leaf": {join(ecCert, ca.CertPEM), pkcs8(t, ec), ""},
		"no certificate":       {nil, pkcs8(t, ec), ReasonMissingKey},
		"no key":               {ecCert, []byte("\n"), ReasonMissingKey},
		"certificate is junk":  {pemOf("CERTIFICATE", []byte("junk")), pkcs8(t, ec), ReasonBadCertificate},
		"key is junk":          {ecCert, pemOf("PRIVATE KEY", []byte("junk")), ReasonBadKey},
		"key is a certificate": {ecCert, ecCert, ReasonBadKey},
		"encrypted key":        {ecCert, relabel(pkcs8(t, ec), "ENCRYPTED PRIVATE KEY"), ReasonBadKey},
		"legacy encrypted key": {ecCert, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte("x")}), ReasonBadKey},
		"another's key":        {ecCert, pkcs8(t, rsa), ReasonKeyMismatch},
		"the chain's CA's key": {join(ecCert, ca.CertPEM), ca.KeyPEM, ReasonKeyMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			kp, err := ParseKeyPair(tc.cert, tc.key)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ParseKeyPair: %v", err)
				}
				if !bytes.Equal(kp.CertPEM, tc.cert) || !bytes.Equal(kp.KeyPEM, tc.key) || kp.Cert == nil || kp.Key == nil {
					t.Error("the key pair is not its input, parsed")
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) || p.Reason != tc.want {
				t.Errorf("ParseKeyPair: %v, want a Problem %s", err, tc.want)
			}
		})
	}
}

// join concatenates PEM inputs.
func join(pems ...[]byte) []byte { return bytes.Join(pems, nil) }

// relabel gives the first PEM block of in the type typ.
func relabel(in []byte, typ string) []byte {
	b, _ := pem.Decode(in)
	return pemOf(typ, b.Bytes)
}

// TestParseKeyPairCopies: the key pair does not alias the caller's buffers, which the
// caller may reuse (a Secret's data from an informer cache is not to be touched).
func TestParseKeyPairCopies(t *testing.T) {
	ca := mustCA(t, "ca")
	certPEM, keyPEM := bytes.Clone(ca.CertPEM), bytes.Clone(ca.KeyPEM)
	kp, err := ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	kp.CertPEM[0], kp.KeyPEM[0] = 'x', 'x'
	if certPEM[0] == 'x' || keyPEM[0] == 'x' {
		t.Error("the key pair's PEM aliases the input")
	}
}
