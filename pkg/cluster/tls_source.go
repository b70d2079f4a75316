package cluster

import (
	"bytes"
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
// Problem, and source returns nil: nothing new is written from it.
func (t *tlsPass) source(ctx context.Context, from *api.TLSSource, caSecret, port string, names []string) (*portSource, error) {
	var ca *pki.KeyPair
	// The client port always trusts the operator's own client CA: the operator, member-init
	// and backups authenticate with its certificates, whoever issues the applications'.
	if from.SecretName == "" || port == "client" {
		var err error
		if ca, err = t.ensureCA(ctx, caSecret, port); err != nil {
			return nil, err
		}
		if ca == nil {
			return &portSource{frozen: true}, nil
		}
	}
	if from.SecretName == "" {
		out := &portSource{issuer: ca, servedCA: ca.CertPEM, trust: ca.CertPEM}
		if port == "client" {
			out.clientIssuer = ca
		}
		return out, nil
	}
	// A user's Secret that cannot be used freezes the port; the operator's client CA still
	// renews the client certificates.
	frozen := &portSource{frozen: true, clientIssuer: ca}
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
	out := &portSource{cert: cert, key: key, servedCA: userCA, trust: userCA}
	if ca != nil {
		out.trust = pki.Bundle(userCA, ca.CertPEM)
		out.clientIssuer = ca
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

// ensureCA returns the operator's CA kept in Secret name, made when there is none. A Secret
// of that name that is not the cluster's, or does not hold a CA with its key, is the pass's
// Problem and nil is returned: a CA is never replaced, since every member trusts it.
func (t *tlsPass) ensureCA(ctx context.Context, name, port string) (*pki.KeyPair, error) {
	have, err := t.r.secret(ctx, t.c.Namespace, name)
	if err != nil {
		return nil, err
	}
	if have == nil {
		var issued string
		if port != "client" || !t.clientIdle {
			if issued, err = t.membersHold(ctx, port); err != nil {
				return nil, err
			}
		}
		if issued == "" && t.running[port] {
			issued = "the running member pods"
		}
		if issued != "" {
			{
				// A new CA would be one the running members do not trust.
				t.fail("Secret %s, which held the cluster's %s CA, is gone, and certificates it issued are in use (%s); the operator does not make another CA the members would not trust: restore the Secret (docs/tls.md)",
					name, port, issued)
			}
			return nil, nil
		}
		ca, err := pki.NewCA(fmt.Sprintf("%s %s CA (%s)", t.c.Name, port, t.c.Namespace), t.r.caLifetime(t.c), t.now)
		if err != nil {
			return nil, fmt.Errorf("making the %s CA: %w", port, err)
		}
		want := t.secret(name, corev1.SecretTypeTLS, map[string][]byte{
			corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM, caKey: ca.CertPEM})
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
	if !metav1.IsControlledBy(have, t.c) {
		t.fail("Secret %s, where the cluster's %s CA is kept, is not this cluster's; the operator leaves it alone: delete or rename it", name, port)
		return nil, nil
	}
	ca, problem := pki.CheckCA(have.Data[corev1.TLSCertKey], have.Data[corev1.TLSPrivateKeyKey], t.now)
	if problem != nil {
		t.fail("Secret %s does not hold the cluster's %s CA any more (%s); the operator never replaces a CA members trust: restore the Secret", name, port, problem.Message)
		return nil, nil
	}
	t.caExpiry(port, ca.CertPEM)
	if t.now.After(pki.RenewAt(ca.Cert)) {
		t.view.Expiring = fmt.Sprintf("the cluster's %s CA (Secret %s) expires at %s; this operator version does not rotate CAs (docs/tls.md)",
			port, name, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
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

// leavingSource is where the client port's certificates come from while it moves off TLS
// (spec.tls.client removed, member pods still serving it): what the members' Secrets hold,
// which they started with. The operator's client CA, when it issued them, goes on renewing
// them, and issues those of a member added meanwhile; a user's certificate is copied to it as
// it was to the others. No CA is made: a new one would be one no running member trusts.
func (t *tlsPass) leavingSource(ctx context.Context) (*portSource, error) {
	var ca *pki.KeyPair
	have, err := t.r.secret(ctx, t.c.Namespace, member.ClientCASecretName(t.c.Name))
	if err != nil {
		return nil, err
	}
	if have != nil && metav1.IsControlledBy(have, t.c) {
		if kp, problem := pki.CheckCA(have.Data[corev1.TLSCertKey], have.Data[corev1.TLSPrivateKeyKey], t.now); problem == nil {
			ca = &kp
		}
	}
	for _, ord := range t.ordinals {
		s, err := t.r.secret(ctx, t.c.Namespace, member.TLSSecretName(t.c.Name, ord))
		if err != nil {
			return nil, err
		}
		if s == nil || !metav1.IsControlledBy(s, t.c) || len(s.Data[member.KeyServerCert]) == 0 || len(s.Data[member.KeyClientCA]) == 0 {
			continue
		}
		held := s.Data
		if ca != nil && bytes.Equal(held[member.KeyServerCA], ca.CertPEM) {
			return &portSource{issuer: ca, servedCA: ca.CertPEM, trust: held[member.KeyClientCA], clientIssuer: ca}, nil
		}
		if certs, err := pki.ParseCertificates(held[member.KeyServerCert]); err == nil && len(certs) > 0 {
			t.leafServed(certs[0].NotAfter)
		}
		return &portSource{cert: held[member.KeyServerCert], key: held[member.KeyServerKey], servedCA: held[member.KeyServerCA],
			trust: held[member.KeyClientCA], clientIssuer: ca}, nil
	}
	// No member Secret holds them: the members keep what they have.
	return &portSource{frozen: true, clientIssuer: ca}, nil
}
