package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// A user's CA that issues through an intermediate, as cert-manager's CA issuer chained to a
// root does: tls.crt holds the leaf and the intermediate, ca.crt the root alone.

// chainedCA is a root that may sign one intermediate, and an intermediate of it.
func chainedCA(t *testing.T, name string, notBefore time.Time) (root, mid pki.KeyPair) {
	t.Helper()
	newCA := func(cn string, pathLen int, parent *pki.KeyPair) pki.KeyPair {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
			NotBefore: notBefore, NotAfter: notBefore.Add(10 * 365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, MaxPathLen: pathLen, MaxPathLenZero: pathLen == 0}
		parentCert, signer := tmpl, any(key)
		if parent != nil {
			parentCert, signer = parent.Cert, parent.Key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), signer)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return pki.KeyPair{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	}
	root = newCA(name+" root", 1, nil)
	return root, newCA(name+" intermediate", 0, &root)
}

// chainedSecret is a user's Secret of a leaf of mid for names, with mid after it, and root
// as its ca.crt.
func chainedSecret(t *testing.T, name string, root, mid pki.KeyPair, names []string, notBefore time.Time) *corev1.Secret {
	t.Helper()
	s := userSecret(t, name, mid, names, notBefore, 90*24*time.Hour)
	s.Data["tls.crt"] = pki.Bundle(s.Data["tls.crt"], mid.CertPEM)
	s.Data["ca.crt"] = root.CertPEM
	return s
}
