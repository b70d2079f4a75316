package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"slices"
)

// Trust sets: which CAs a trust bundle holds, named by fingerprint, so that a CA rotation can
// say what a member trusts without carrying the certificates (docs/tls.md).

// fingerprintLength is how many hex digits of a certificate's SHA-256 name it: enough that two
// CAs of one cluster never share a name, short enough for an annotation a user reads.
const fingerprintLength = 16

// Fingerprint names a certificate by its DER bytes' SHA-256.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])[:fingerprintLength]
}

// Fingerprints are the sorted fingerprints of the certificates in pemBytes, each once; none
// when it holds none or one does not parse.
func Fingerprints(pemBytes []byte) []string {
	certs, p := parseCertificates("the PEM", pemBytes)
	if p != nil {
		return nil
	}
	out := make([]string, 0, len(certs))
	for _, c := range certs {
		out = append(out, Fingerprint(c))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SignedBy is the fingerprint of the first CA of cas that signed the leaf that opens certPEM,
// directly or through the intermediates that follow it there (ChainSignedBy); "" when none
// did (or certPEM holds no certificate). Only signatures are checked: whether the leaf is in
// its validity is another question (Check's).
func SignedBy(certPEM []byte, cas []*x509.Certificate) string {
	certs, p := parseCertificates("the PEM", certPEM)
	if p != nil {
		return ""
	}
	return ChainSignedBy(certs, cas)
}

// ChainSignedBy is the fingerprint of the first CA of cas that signed chain's leaf (its first
// certificate) directly, or an intermediate of chain that signed it, as a TLS peer builds the
// chain from what it is sent: a user's Secret holds its leaf with intermediates after it, and
// its ca.crt the root alone. "" when none did.
func ChainSignedBy(chain []*x509.Certificate, cas []*x509.Certificate) string {
	if len(chain) == 0 {
		return ""
	}
	cur, rest := chain[0], slices.Clone(chain[1:])
	for range chain {
		if fp := LeafSignedBy(cur, cas); fp != "" {
			return fp
		}
		i := slices.IndexFunc(rest, func(c *x509.Certificate) bool { return cur.CheckSignatureFrom(c) == nil })
		if i < 0 {
			return ""
		}
		cur = rest[i]
		rest = slices.Delete(rest, i, i+1)
	}
	return ""
}

// LeafSignedBy is SignedBy for a parsed leaf.
func LeafSignedBy(leaf *x509.Certificate, cas []*x509.Certificate) string {
	for _, ca := range cas {
		if leaf.CheckSignatureFrom(ca) == nil {
			return Fingerprint(ca)
		}
	}
	return ""
}
