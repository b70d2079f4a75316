package cluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// What the members' Secrets trust, and when an operator CA starts to rotate.

// trustSet is what the members' Secrets trust of one port, and what its source asks them to
// trust, by trust key, with the CAs themselves.
type trustSet struct {
	// fps are the CAs the Secrets trust (all of them together); where none holds a key yet,
	// the wanted ones: nothing trusts anything else.
	fps map[string][]string
	// wantFps and wantCerts are the CAs the source asks for.
	wantFps   map[string][]string
	wantCerts map[string][]*x509.Certificate
	// certs are every CA held or wanted, by fingerprint.
	certs map[string]*x509.Certificate
}

// heldTrust reads what the members' Secrets trust of the keys of want.
func heldTrust(members map[int]*corev1.Secret, want map[string][]byte) trustSet {
	ts := trustSet{fps: map[string][]string{}, wantFps: map[string][]string{}, wantCerts: map[string][]*x509.Certificate{},
		certs: map[string]*x509.Certificate{}}
	for k, wantPEM := range want {
		for _, c := range parsedCerts(wantPEM) {
			fp := pki.Fingerprint(c)
			ts.certs[fp] = c
			ts.wantFps[k] = append(ts.wantFps[k], fp)
			ts.wantCerts[k] = append(ts.wantCerts[k], c)
		}
		for _, s := range members {
			for _, c := range parsedCerts(s.Data[k]) {
				fp := pki.Fingerprint(c)
				ts.certs[fp] = c
				ts.fps[k] = append(ts.fps[k], fp)
			}
		}
		if len(ts.fps[k]) == 0 {
			ts.fps[k] = slices.Clone(ts.wantFps[k])
		}
		ts.fps[k] = slices.Compact(slices.Sorted(slices.Values(ts.fps[k])))
		ts.wantFps[k] = slices.Compact(slices.Sorted(slices.Values(ts.wantFps[k])))
	}
	return ts
}

// bundle is the trust bundle of key k while the port rotates: the wanted CAs (as the source
// has them), then the others the Secrets trust, by fingerprint, so that it reads the same on
// every pass.
func (ts trustSet) bundle(k string, want []byte) []byte {
	parts := [][]byte{want}
	for _, fp := range ts.fps[k] {
		if !slices.Contains(ts.wantFps[k], fp) {
			parts = append(parts, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.certs[fp].Raw}))
		}
	}
	return pki.Bundle(parts...)
}

// roots are every CA of key k held or wanted: what a member's served leaf is verified
// against while the port rotates.
func (ts trustSet) roots(k string) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, fp := range append(slices.Clone(ts.fps[k]), ts.wantFps[k]...) {
		pool.AddCert(ts.certs[fp])
	}
	return pool
}

// parsedCerts are the certificates of pemBytes; none when it does not parse.
func parsedCerts(pemBytes []byte) []*x509.Certificate {
	if len(pemBytes) == 0 {
		return nil
	}
	certs, err := pki.ParseCertificates(pemBytes)
	if err != nil {
		return nil
	}
	return certs
}

// rotateDue says why the operator's CA in pair is to rotate: it is past two thirds of its life
// (where a leaf is renewed), or the cluster's AnnotationRotateCA holds a value the CA Secret
// has not recorded. Empty when it is not.
func (t *tlsPass) rotateDue(pair *caPair) string {
	if !t.now.Before(pki.RenewAt(pair.cur.Cert)) {
		return fmt.Sprintf("it is past two thirds of its life (it expires at %s)", pair.cur.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	token := t.c.Annotations[api.AnnotationRotateCA]
	if token != "" && pair.secret != nil && token != pair.secret.Annotations[api.AnnotationRotateCA] {
		return fmt.Sprintf("the annotation %s=%s asks for it", api.AnnotationRotateCA, token)
	}
	return ""
}

// startRotation makes the CA the port's CA rotates to, and keeps it, with its key, beside the
// old one in the CA Secret (caNextCert, caNextKey), with the rotation request it honours: the
// one write that starts a rotation. Nothing trusts the new CA yet.
func (t *tlsPass) startRotation(ctx context.Context, pair *caPair, port, why string) error {
	next, err := pki.NewCA(fmt.Sprintf("%s %s CA (%s) from %s", t.c.Name, port, t.c.Namespace, t.now.UTC().Format(time.RFC3339)),
		t.r.caLifetime(t.c), t.now)
	if err != nil {
		return fmt.Errorf("making the new %s CA: %w", port, err)
	}
	want := pair.secret.DeepCopy()
	want.Data[caNextCert], want.Data[caNextKey] = next.CertPEM, next.KeyPEM
	if token := t.c.Annotations[api.AnnotationRotateCA]; token != "" {
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[api.AnnotationRotateCA] = token
	}
	if err := t.r.control.UpdateSecret(ctx, t.c, want); err != nil {
		return fmt.Errorf("keeping the new %s CA in Secret %s: %w", port, pair.name, err)
	}
	pair.next, pair.secret = &next, want
	t.events = append(t.events, func() {
		t.r.event(t.c, corev1.EventTypeNormal, EventCARotationStarted,
			"Rotating the cluster's %s CA (Secret %s) because %s: made a new CA, valid until %s. The members' Secrets trust both, and the members are restarted onto both, one at a time",
			port, pair.name, why, next.Cert.NotAfter.UTC().Format(time.RFC3339))
	})
	return nil
}
