package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// The names Check and CheckCA give their inputs in messages: the keys of a Secret in the
// kubernetes.io/tls layout.
const (
	certName = "tls.crt"
	keyName  = "tls.key"
	caName   = "ca.crt"
)

// ParseKeyPair parses a certificate (the first CERTIFICATE block of certPEM) and its private
// key (PKCS#1, PKCS#8 or SEC 1 EC in keyPEM) and checks that they belong together. CertPEM and
// KeyPEM of the result are copies of the input. Its error is a *Problem, and never holds key
// material.
func ParseKeyPair(certPEM, keyPEM []byte) (KeyPair, error) {
	kp, p := parseKeyPair(certPEM, keyPEM)
	if p != nil {
		return KeyPair{}, p
	}
	return kp, nil
}

// parseKeyPair is ParseKeyPair with the error's type kept, for Check and CheckCA.
func parseKeyPair(certPEM, keyPEM []byte) (KeyPair, *Problem) {
	if p := notEmpty(certName, certPEM); p != nil {
		return KeyPair{}, p
	}
	if p := notEmpty(keyName, keyPEM); p != nil {
		return KeyPair{}, p
	}
	certs, p := parseCertificates(certName, certPEM)
	if p != nil {
		return KeyPair{}, p
	}
	key, p := parseKey(keyName, keyPEM)
	if p != nil {
		return KeyPair{}, p
	}
	if p := matchKey(certs[0], key); p != nil {
		return KeyPair{}, p
	}
	return KeyPair{
		Cert:    certs[0],
		Key:     key,
		CertPEM: bytes.Clone(certPEM),
		KeyPEM:  bytes.Clone(keyPEM),
	}, nil
}

// ParseCertificates parses every CERTIFICATE block of pemBytes, in order; other blocks are
// skipped. It fails if there is none, or if one does not parse.
func ParseCertificates(pemBytes []byte) ([]*x509.Certificate, error) {
	certs, p := parseCertificates("the PEM", pemBytes)
	if p != nil {
		return nil, errors.New(p.Message)
	}
	return certs, nil
}

// parseCertificates is ParseCertificates naming its input what in messages.
func parseCertificates(what string, pemBytes []byte) ([]*x509.Certificate, *Problem) {
	var certs []*x509.Certificate
	rest := pemBytes
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			// A parser's error describes the structure it expected (tags, lengths, OIDs),
			// never the bytes it was given, so it may be shown even if a key was pasted here.
			return nil, &Problem{Reason: ReasonBadCertificate,
				Message: fmt.Sprintf("%s: certificate %d does not parse: %v", what, len(certs)+1, err)}
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, &Problem{Reason: ReasonBadCertificate,
			Message: fmt.Sprintf("%s holds no PEM CERTIFICATE block", what)}
	}
	return certs, nil
}

// parseKey parses the first private key block of keyPEM, whatever its encoding. Its messages
// name the input and what is wrong, and never quote the input, a block's type or a parser's
// error: all of them come from the key.
func parseKey(what string, keyPEM []byte) (crypto.Signer, *Problem) {
	rest := keyPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, &Problem{Reason: ReasonBadKey,
				Message: fmt.Sprintf("%s holds no key in PEM", what)}
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			// openssl writes EC PARAMETERS before an EC key.
			continue
		}
		if strings.HasPrefix(block.Type, "ENCRYPTED") || block.Headers["Proc-Type"] != "" {
			return nil, &Problem{Reason: ReasonBadKey,
				Message: fmt.Sprintf("%s holds an encrypted key; etcd needs it unencrypted", what)}
		}
		if key := decodeKey(block.Bytes); key != nil {
			return key, nil
		}
		return nil, &Problem{Reason: ReasonBadKey,
			Message: fmt.Sprintf("%s holds a key that is neither PKCS#1, PKCS#8 nor SEC 1 EC, or one that cannot sign", what)}
	}
}

// decodeKey tries each encoding a Secret's key comes in; the label of the PEM block is not
// trusted, as tools write PKCS#8 under several.
func decodeKey(der []byte) crypto.Signer {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s
		}
		return nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k
	}
	return nil
}

// matchKey says whether key is the private half of cert's public key.
func matchKey(cert *x509.Certificate, key crypto.Signer) *Problem {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return &Problem{Reason: ReasonKeyMismatch,
			Message: fmt.Sprintf("%s is not the key of the first certificate in %s (%q)", keyName, certName, cert.Subject.CommonName)}
	}
	return nil
}

// notEmpty refuses an input that is missing (a Secret's absent key reads as empty) or blank.
func notEmpty(what string, b []byte) *Problem {
	if len(bytes.TrimSpace(b)) == 0 {
		return &Problem{Reason: ReasonMissingKey, Message: fmt.Sprintf("%s is missing or empty", what)}
	}
	return nil
}

// Bundle concatenates the CERTIFICATE blocks of pems, in order, each once: a trust bundle of
// several CAs stays stable however often the same CA is added. Other blocks (keys above all),
// headers, and blocks that do not parse as a certificate never enter it.
func Bundle(pems ...[]byte) []byte {
	var out []byte
	seen := map[string]bool{}
	for _, in := range pems {
		rest := in
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" || seen[string(block.Bytes)] {
				continue
			}
			if _, err := x509.ParseCertificate(block.Bytes); err != nil {
				// Whatever it holds, it is no certificate: a key pasted under the wrong
				// label must not be spread to every member's trust bundle.
				continue
			}
			seen[string(block.Bytes)] = true
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})...)
		}
	}
	return out
}
