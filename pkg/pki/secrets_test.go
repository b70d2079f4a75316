package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
)

// secretKey is a private key in one encoding, with the secret values a leak would show: the
// PEM body, and the private numbers as bytes.
type secretKey struct {
	name    string
	pem     []byte
	der     []byte
	secrets [][]byte
}

// secretKeys is a key of each kind and encoding a Secret may hold.
func secretKeys(t *testing.T) []secretKey {
	ec, rsaK, ed := ecKey(t), rsaKey(t), edKey(t)
	ecSecret, err := ec.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	rsaSecrets := [][]byte{rsaK.D.Bytes()}
	for _, p := range rsaK.Primes {
		rsaSecrets = append(rsaSecrets, p.Bytes())
	}
	var out []secretKey
	for _, k := range []struct {
		name    string
		pem     []byte
		secrets [][]byte
	}{
		{"EC PKCS#8", pkcs8(t, ec), [][]byte{ecSecret}},
		{"EC SEC 1", sec1(t, ec), [][]byte{ecSecret}},
		{"RSA PKCS#1", pkcs1(rsaK), rsaSecrets},
		{"RSA PKCS#8", pkcs8(t, rsaK), rsaSecrets},
		{"Ed25519 PKCS#8", pkcs8(t, ed), [][]byte{ed.Seed()}},
	} {
		rest := k.pem
		var block *pem.Block
		for block == nil || !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			block, rest = pem.Decode(rest)
		}
		out = append(out, secretKey{name: k.name, pem: k.pem, der: block.Bytes, secrets: k.secrets})
	}
	return out
}

// TestNoKeyInErrors feeds private keys through every path that can fail, in every place an
// input can be given and in damaged forms, and checks that no error and no Problem quotes
// them: not their PEM, not their DER, not their private numbers in any common rendering.
func TestNoKeyInErrors(t *testing.T) {
	ca := mustCA(t, "ca")
	peer := mustIssue(t, ca, memberRequest())
	for _, k := range secretKeys(t) {
		t.Run(k.name, func(t *testing.T) {
			// The key under the wrong label, damaged, cut short, and as a certificate.
			damaged := append([]byte(nil), k.der...)
			for i := len(damaged) / 2; i < len(damaged); i += 7 {
				damaged[i] ^= 0x5a
			}
			forms := map[string][]byte{
				"as is":            k.pem,
				"relabelled":       pemOf("PRIVATE KEY", k.der),
				"relabelled RSA":   pemOf("RSA PRIVATE KEY", k.der),
				"relabelled EC":    pemOf("EC PRIVATE KEY", k.der),
				"damaged":          pemOf("PRIVATE KEY", damaged),
				"cut short":        pemOf("PRIVATE KEY", k.der[:len(k.der)*2/3]),
				"as a certificate": pemOf("CERTIFICATE", k.der),
				"damaged cert":     pemOf("CERTIFICATE", damaged),
				"bare base64":      []byte(base64.StdEncoding.EncodeToString(k.der)),
				"encrypted":        pemOf("ENCRYPTED PRIVATE KEY", k.der),
			}
			var texts []string
			add := func(err error) {
				if err != nil {
					texts = append(texts, err.Error())
				}
			}
			addP := func(p *Problem) {
				if p != nil {
					texts = append(texts, p.Reason, p.Message, p.Error())
				}
			}
			for form, f := range forms {
				for _, names := range [][]string{nil, memberNames} {
					_, p := Check(f, f, f, names, ServerAuth|ClientAuth, now)
					addP(p)
					_, p = Check(peer.CertPEM, f, ca.CertPEM, names, ServerAuth|ClientAuth, now)
					addP(p)
					_, p = Check(f, peer.KeyPEM, ca.CertPEM, names, ServerAuth|ClientAuth, now)
					addP(p)
					_, p = Check(peer.CertPEM, peer.KeyPEM, f, names, ServerAuth|ClientAuth, now)
					addP(p)
					_, p = Check(join(peer.CertPEM, f), f, join(ca.CertPEM, f), names, ServerAuth|ClientAuth, now)
					addP(p)
				}
				_, p := CheckCA(f, f, now)
				addP(p)
				_, p = CheckCA(ca.CertPEM, f, now)
				addP(p)
				_, p = CheckCA(f, ca.KeyPEM, now)
				addP(p)
				_, err := ParseKeyPair(f, f)
				add(err)
				_, err = ParseKeyPair(ca.CertPEM, f)
				add(err)
				_, err = ParseCertificates(f)
				add(err)
				if b := Bundle(f, ca.CertPEM); strings.Contains(string(b), "PRIVATE KEY") || len(b) != len(ca.CertPEM) {
					t.Errorf("%s: Bundle kept something of the key", form)
				}
			}
			// A CA whose key is not its own, and whose key is this one.
			if kp, err := ParseKeyPair(k.pem, k.pem); err == nil {
				t.Fatalf("a key parsed as a certificate: %v", kp.Cert.Subject)
			}
			if signer, p := parseKey(keyName, k.pem); p == nil {
				_, err := Issue(KeyPair{Cert: ca.Cert, Key: signer}, memberRequest(), now)
				add(err)
			} else {
				t.Fatalf("parsing the key: %s", p.Message)
			}
			if len(texts) == 0 {
				t.Fatal("nothing failed: the test feeds nothing")
			}
			for _, text := range texts {
				if leak := leaks(text, k); leak != "" {
					t.Errorf("%q holds %s", text, leak)
				}
			}
		})
	}
}

// leaks says what of k text holds, or "".
func leaks(text string, k secretKey) string {
	if strings.Contains(strings.ToUpper(text), "PRIVATE KEY") {
		return "a PEM label of a private key"
	}
	body := base64.StdEncoding.EncodeToString(k.der)
	if w := window(text, body, 12); w != "" {
		return "the key's base64 " + w
	}
	if w := window(text, string(k.der), 8); w != "" {
		return "the key's DER"
	}
	for _, s := range k.secrets {
		for _, rendering := range []string{
			string(s),
			hex.EncodeToString(s),
			strings.ToUpper(hex.EncodeToString(s)),
			new(big.Int).SetBytes(s).String(),
			base64.StdEncoding.EncodeToString(s),
		} {
			if w := window(text, rendering, 8); w != "" {
				return "a private number " + w
			}
		}
	}
	return ""
}

// window returns the first n-long substring of secret found in text, or "".
func window(text, secret string, n int) string {
	for i := 0; i+n <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+n]) {
			return secret[i : i+n]
		}
	}
	return ""
}

// TestLeaksSeesALeak: the leak detector catches each rendering, so TestNoKeyInErrors can
// fail.
func TestLeaksSeesALeak(t *testing.T) {
	k := secretKeys(t)[0]
	s := k.secrets[0]
	for name, text := range map[string]string{
		"PEM label":    "bad: -----BEGIN PRIVATE KEY-----",
		"PEM body":     "bad: " + string(k.pem[40:80]),
		"raw DER":      "bad: " + string(k.der),
		"hex":          "bad: " + hex.EncodeToString(s),
		"decimal":      "bad: " + new(big.Int).SetBytes(s).String(),
		"decimal part": "bad: " + new(big.Int).SetBytes(s).Text(10)[3:20],
	} {
		if leaks(text, k) == "" {
			t.Errorf("%s: not seen as a leak", name)
		}
	}
}

var (
	_ crypto.Signer = (*ecdsa.PrivateKey)(nil)
	_ crypto.Signer = (*rsa.PrivateKey)(nil)
	_ crypto.Signer = ed25519.PrivateKey(nil)
)
