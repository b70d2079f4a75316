package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// Where a port's certificates come from: the operator's CAs, or a user's Secret, checked.

// source finds where a port's certificates come from: the operator's CA in caSecret (made
// when missing), and with a user's Secret, that Secret's checked content. A user's Secret
// that fails its checks, or a CA Secret that is not the cluster's or is broken, is the pass's
// Problem, and source returns nil: nothing new is written from it. While an operator's CA
// rotates, the source is the new CA's, and the old one is kept beside it (portSource.old):
// which of them issues this pass's leaves is the rotation's to say (tls_rotation.go).
func (t *tlsPass) source(ctx context.Context, from *api.TLSSource, caSecret, port string, names []string) (*portSource, error) {
	var pair *caPair
	// The client port always trusts the operator's own client CA: the operator, member-init
	// and backups authenticate with its certificates, whoever issues the applications'.
	if from.SecretName == "" || port == "client" {
		var err error
		if pair, err = t.ensureCA(ctx, caSecret, port); err != nil {
			return nil, err
		}
		if pair == nil {
			return &portSource{frozen: true}, nil
		}
	}
	if from.SecretName == "" {
		ca := pair.want()
		out := &portSource{issuer: ca, servedCA: ca.CertPEM, trust: ca.CertPEM, ca: pair}
		if port == "client" {
			out.clientIssuer = ca
		}
		return out, nil
	}
	// A user's Secret that cannot be used freezes the port; the operator's client CA still
	// renews the client certificates, from the CA every member trusts.
	frozen := &portSource{frozen: true}
	if pair != nil {
		frozen.clientIssuer = pair.cur
	}
	// From the cache when the Secret carries the operator's managed-by label (the cache holds
	// no other), else from the API server: a user's Secret costs a read per pass unless
	// labelled (docs/tls.md).
	s, err := t.r.secret(ctx, t.c.Namespace, from.SecretName)
	switch {
	case err != nil:
		return nil, err
	case s == nil:
		t.fail("Secret %s (spec.tls.%s.secretName) does not exist", from.SecretName, port)
		return frozen, nil
	}
	cert, key, userCA := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], s.Data[caKey]
	leaf, problem := t.r.certs.check(cert, key, userCA, names, pki.ServerAuth|pki.ClientAuth, t.now)
	if problem != nil {
		t.fail("Secret %s (spec.tls.%s.secretName) cannot be used: %s", from.SecretName, port, problem.Message)
		return frozen, nil
	}
	t.leafServed(leaf.NotAfter)
	if left := leaf.NotAfter.Sub(t.now); left < leaf.NotAfter.Sub(leaf.NotBefore)/expiringShare {
		t.view.Expiring = fmt.Sprintf("the certificate in Secret %s (spec.tls.%s.secretName) expires at %s and was not renewed; members stop trusting each other (or clients stop trusting members) then",
			from.SecretName, port, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	t.caExpiry(port, userCA)
	out := &portSource{cert: cert, key: key, servedCA: userCA, trust: userCA, userSecret: from.SecretName}
	if pair != nil {
		out.trust = pki.Bundle(userCA, pair.want().CertPEM)
		out.clientIssuer, out.ca = pair.want(), pair
	}
	return out, nil
}

// caKey is the key of the CA in a Secret of the kubernetes.io/tls layout, as cert-manager
// writes it.
const caKey = "ca.crt"

// fail records why the cluster's certificates cannot be used; the first reason found wins.
func (t *tlsPass) fail(format string, args ...any) {
	if t.view.Problem == nil {
		t.view.Problem = &plan.TLSProblem{Reason: api.ReasonTLSSecretInvalid, Message: fmt.Sprintf(format, args...)}
	}
}

// leafServed keeps the earliest expiry of the leaves the members serve.
func (t *tlsPass) leafServed(notAfter time.Time) {
	if t.earliest.IsZero() || notAfter.Before(t.earliest) {
		t.earliest = notAfter
	}
}

// caExpiry records the expiry of the first CA in caPEM as the port's CA expiry.
func (t *tlsPass) caExpiry(port string, caPEM []byte) {
	certs, err := pki.ParseCertificates(caPEM)
	if err != nil || len(certs) == 0 {
		return
	}
	at := &metav1.Time{Time: certs[0].NotAfter}
	for _, c := range certs[1:] {
		if c.NotAfter.Before(at.Time) {
			at.Time = c.NotAfter
		}
	}
	switch port {
	case "peer":
		t.view.Status.PeerCAExpiry = earlier(t.view.Status.PeerCAExpiry, at)
	default:
		t.view.Status.ClientCAExpiry = earlier(t.view.Status.ClientCAExpiry, at)
	}
}

func earlier(a, b *metav1.Time) *metav1.Time {
	if a == nil || b.Before(a) {
		return b
	}
	return a
}

// Keys of an operator CA Secret, beside tls.crt, tls.key and ca.crt (the CA that issues the
// leaves): the CA that replaces it while it rotates (docs/tls.md).
const (
	caNextCert = "next.crt"
	caNextKey  = "next.key"
)

// caPair is an operator CA Secret as ensureCA found it: the CA the members' leaves are of
// (cur), and while it rotates, the CA that replaces it (next).
type caPair struct {
	name      string
	cur, next *pki.KeyPair
	secret    *corev1.Secret
}

// want is the CA the port moves to: the new one while it rotates.
func (p *caPair) want() *pki.KeyPair {
	if p.next != nil {
		return p.next
	}
	return p.cur
}

// ensureCA returns the operator's CA kept in Secret name, made when there is none, and
// starts its rotation when it is due (rotateDue). A Secret of that name that is not the
// cluster's, or does not hold a CA with its key, is the pass's Problem and nil is returned: a
// CA is never replaced but by a rotation, since every member trusts it.
func (t *tlsPass) ensureCA(ctx context.Context, name, port string) (*caPair, error) {
	have, err := t.r.secret(ctx, t.c.Namespace, name)
	if err != nil {
		return nil, err
	}
	if have == nil {
		ca, err := t.newCA(ctx, name, port)
		if ca == nil || err != nil {
			return nil, err
		}
		return &caPair{name: name, cur: ca}, nil
	}
	if !metav1.IsControlledBy(have, t.c) {
		t.fail("Secret %s, where the cluster's %s CA is kept, is not this cluster's; the operator leaves it alone: delete or rename it", name, port)
		return nil, nil
	}
	ca, problem := pki.CheckCA(have.Data[corev1.TLSCertKey], have.Data[corev1.TLSPrivateKeyKey], t.now)
	if problem != nil {
		t.fail("Secret %s does not hold the cluster's %s CA any more (%s); the operator never replaces a CA members trust: restore the Secret", name, port, problem.Message)
		return nil, nil
	}
	pair := &caPair{name: name, cur: &ca, secret: have}
	if len(have.Data[caNextCert]) > 0 {
		next, problem := pki.CheckCA(have.Data[caNextCert], have.Data[caNextKey], t.now)
		if problem != nil {
			t.fail("Secret %s holds a new %s CA that cannot be used (%s): remove %s and %s from it to rotate again",
				name, port, problem.Message, caNextCert, caNextKey)
			return nil, nil
		}
		pair.next = &next
	}
	t.caExpiry(port, ca.CertPEM)
	if left := ca.Cert.NotAfter.Sub(t.now); left < ca.Cert.NotAfter.Sub(ca.Cert.NotBefore)/expiringShare {
		t.view.Expiring = fmt.Sprintf("the cluster's %s CA (Secret %s) expires at %s and its rotation has not finished (status.tls says where it stands)",
			port, name, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if why := t.rotateDue(pair); why != "" && pair.next == nil {
		return pair, t.startRotation(ctx, pair, port, why)
	}
	return pair, nil
}

// newCA makes the port's CA in Secret name, when no certificate of an earlier one is in use;
// nil when it is (the pass's Problem) or when the Secret was made meanwhile.
func (t *tlsPass) newCA(ctx context.Context, name, port string) (*pki.KeyPair, error) {
	var issued string
	var err error
	if !t.idle(port) {
		if issued, err = t.membersHold(ctx, port); err != nil {
			return nil, err
		}
	}
	if issued == "" && t.running[port] {
		issued = "the running member pods"
	}
	if issued != "" {
		// A new CA would be one the running members do not trust.
		t.fail("Secret %s, the cluster's %s CA, is gone (or was never made), and the members use certificates of a CA they trust (%s); the operator does not make another CA they would not trust. If the Secret was deleted, restore it (docs/tls.md); if they hold your own certificate, left by a move off TLS under way, name its Secret in spec.tls.%s again, or remove spec.tls.%s and wait until the move has ended",
			name, port, issued, port, port)
		return nil, nil
	}
	ca, err := pki.NewCA(fmt.Sprintf("%s %s CA (%s)", t.c.Name, port, t.c.Namespace), t.r.caLifetime(t.c), t.now)
	if err != nil {
		return nil, fmt.Errorf("making the %s CA: %w", port, err)
	}
	want := t.secret(name, corev1.SecretTypeTLS, map[string][]byte{
		corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM, caKey: ca.CertPEM})
	if token := t.c.Annotations[api.AnnotationRotateCA]; token != "" {
		// A request made before the CA existed is not one to rotate it.
		want.Annotations = map[string]string{api.AnnotationRotateCA: token}
	}
	created, err := t.r.control.CreateSecret(ctx, t.c, want)
	if err != nil || !created {
		// Made meanwhile (a cache that lagged): the next pass reads it.
		return nil, err
	}
	t.r.event(t.c, corev1.EventTypeNormal, EventCAIssued, "Made the cluster's %s CA in Secret %s, valid until %s",
		port, name, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	t.caExpiry(port, ca.CertPEM)
	return &ca, nil
}

// membersHold names a member Secret of the cluster's that holds certificates of the port's
// CA; "" when none does.
func (t *tlsPass) membersHold(ctx context.Context, port string) (string, error) {
	key := member.KeyPeerCA
	if port == "client" {
		key = member.KeyClientCA
	}
	for _, ord := range t.ordinals {
		name := member.TLSSecretName(t.c.Name, ord)
		have, err := t.r.secret(ctx, t.c.Namespace, name)
		if err != nil {
			return "", err
		}
		if have != nil && metav1.IsControlledBy(have, t.c) && len(have.Data[key]) > 0 {
			return "Secret " + name, nil
		}
	}
	return "", nil
}
