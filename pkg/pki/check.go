package pki

import (
	"crypto/x509"
	"fmt"
	"strings"
	"time"
)

// Check checks a leaf as the operator gets it from a Secret in cert-manager's kubernetes.io/tls
// layout: certPEM (tls.crt: the leaf first, intermediates may follow), keyPEM (tls.key:
// PKCS#1, PKCS#8 or SEC 1 EC) and caPEM (ca.crt: one CA or more). The leaf must be valid at
// now, chain to one of caPEM's CAs, cover each of names (DNS names or IP literals; a wildcard
// covers as crypto/x509's VerifyHostname says) and allow usages, as Go's TLS (etcd's) will
// require when the leaf is served or presented. Check returns the parsed leaf, or, and then
// no leaf, a Problem naming the first thing wrong, looked for in this order: an input empty
// (MissingKey: tls.crt, tls.key, ca.crt), one that does not parse (BadCertificate, BadKey,
// BadCertificate, in the same order), the key not the leaf's (KeyMismatch), the leaf not
// valid at now (NotYetValid, Expired), no chain to ca.crt (Untrusted), names not covered
// (MissingNames, listing them), a usage not allowed (WrongUsage).
func Check(certPEM, keyPEM, caPEM []byte, names []string, usages Usage, now time.Time) (*x509.Certificate, *Problem) {
	for _, in := range []struct {
		what string
		b    []byte
	}{{certName, certPEM}, {keyName, keyPEM}, {caName, caPEM}} {
		if p := notEmpty(in.what, in.b); p != nil {
			return nil, p
		}
	}
	chain, p := parseCertificates(certName, certPEM)
	if p != nil {
		return nil, p
	}
	key, p := parseKey(keyName, keyPEM)
	if p != nil {
		return nil, p
	}
	cas, p := parseCertificates(caName, caPEM)
	if p != nil {
		return nil, p
	}
	leaf := chain[0]
	if p := matchKey(leaf, key); p != nil {
		return nil, p
	}
	if p := checkValidity(certName, leaf, now); p != nil {
		return nil, p
	}
	opts := x509.VerifyOptions{
		Roots:         x509.NewCertPool(),
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	for _, c := range cas {
		opts.Roots.AddCert(c)
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		// Verify's errors name certificates by subject and say what failed; they hold no key.
		return nil, &Problem{Reason: ReasonUntrusted,
			Message: fmt.Sprintf("%s does not chain to %s: %v", certName, caName, err)}
	}
	if p := checkNames(leaf, names); p != nil {
		return nil, p
	}
	if p := checkUsages(leaf, usages, opts); p != nil {
		return nil, p
	}
	return leaf, nil
}

// checkValidity refuses a certificate that is not valid at now.
func checkValidity(what string, c *x509.Certificate, now time.Time) *Problem {
	from, until := c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339)
	switch {
	case now.Before(c.NotBefore):
		return &Problem{Reason: ReasonNotYetValid,
			Message: fmt.Sprintf("%s is not valid yet: valid from %s until %s, it is %s", what, from, until, now.UTC().Format(time.RFC3339))}
	case now.After(c.NotAfter):
		return &Problem{Reason: ReasonExpired,
			Message: fmt.Sprintf("%s has expired: valid from %s until %s, it is %s", what, from, until, now.UTC().Format(time.RFC3339))}
	}
	return nil
}

// checkNames refuses a leaf that does not cover every one of names.
func checkNames(leaf *x509.Certificate, names []string) *Problem {
	var missing []string
	for _, n := range names {
		if leaf.VerifyHostname(n) != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return &Problem{Reason: ReasonMissingNames,
			Message: fmt.Sprintf("%s is not valid for %s", certName, strings.Join(missing, ", "))}
	}
	return nil
}

// checkUsages refuses a leaf that may not be used as usages say. The leaf's own extended key
// usages are read here, for a message that says what they are; then the chain is verified for
// each usage, as Go's TLS does it, because an intermediate's extended key usages constrain
// every certificate it signs.
func checkUsages(leaf *x509.Certificate, usages Usage, opts x509.VerifyOptions) *Problem {
	for _, u := range []struct {
		usage Usage
		eku   x509.ExtKeyUsage
		what  string
	}{
		{ServerAuth, x509.ExtKeyUsageServerAuth, "server authentication"},
		{ClientAuth, x509.ExtKeyUsageClientAuth, "client authentication"},
	} {
		if usages&u.usage == 0 {
			continue
		}
		if !allows(leaf, u.eku) {
			return &Problem{Reason: ReasonWrongUsage,
				Message: fmt.Sprintf("%s is not valid for %s; its extended key usages are %s", certName, u.what, describeUsages(leaf))}
		}
		// The chain verified for any usage: failing now, it fails on usage alone.
		opts.KeyUsages = []x509.ExtKeyUsage{u.eku}
		if _, err := leaf.Verify(opts); err != nil {
			return &Problem{Reason: ReasonWrongUsage,
				Message: fmt.Sprintf("%s is not valid for %s through its chain: %v", certName, u.what, err)}
		}
	}
	return nil
}

// allows says whether leaf's extended key usages allow eku: a leaf that lists none, or lists
// "any", allows every usage.
func allows(leaf *x509.Certificate, eku x509.ExtKeyUsage) bool {
	if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 {
		return true
	}
	for _, u := range leaf.ExtKeyUsage {
		if u == eku || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// describeUsages names leaf's extended key usages for a message.
func describeUsages(leaf *x509.Certificate) string {
	var out []string
	for _, u := range leaf.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			out = append(out, "server authentication")
		case x509.ExtKeyUsageClientAuth:
			out = append(out, "client authentication")
		default:
			out = append(out, fmt.Sprintf("usage %d", u))
		}
	}
	for _, oid := range leaf.UnknownExtKeyUsage {
		out = append(out, oid.String())
	}
	return strings.Join(out, ", ")
}

// CheckCA checks a CA key pair the operator made and keeps (tls.crt and tls.key of
// <name>-peer-ca or <name>-client-ca): both parse, the key is the certificate's, the
// certificate is valid at now, and it is a CA that may sign certificates.
func CheckCA(certPEM, keyPEM []byte, now time.Time) (KeyPair, *Problem) {
	kp, p := parseKeyPair(certPEM, keyPEM)
	if p != nil {
		return KeyPair{}, p
	}
	if p := checkValidity(certName, kp.Cert, now); p != nil {
		return KeyPair{}, p
	}
	if !kp.Cert.BasicConstraintsValid || !kp.Cert.IsCA {
		return KeyPair{}, &Problem{Reason: ReasonWrongUsage,
			Message: fmt.Sprintf("%s (%q) is not a CA certificate", certName, kp.Cert.Subject.CommonName)}
	}
	if kp.Cert.KeyUsage != 0 && kp.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return KeyPair{}, &Problem{Reason: ReasonWrongUsage,
			Message: fmt.Sprintf("%s (%q) may not sign certificates", certName, kp.Cert.Subject.CommonName)}
	}
	return kp, nil
}
