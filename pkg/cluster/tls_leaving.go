package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// Where a port's certificates come from while it moves off TLS: its spec is gone, and member
// pods still serve and dial it over TLS until the move is done. Their certificates must stay
// valid all that time (a move that waits on a member down may outlast a leaf), and nothing
// they trust may change.

// peerTLSInUse reports whether the peer port takes TLS: by the spec, or while it moves off,
// because pods listen over TLS, or are made to (observation.peer).
func peerTLSInUse(c *api.EtcdCluster, o *observation) bool {
	return member.PeerTLS(c) || o.peer.Listen.TLS() || peerTLSRunning(c, o.pods)
}

// peerLeavingSource is where the peer port's certificates come from while it moves off TLS
// (spec.tls.peer removed): what the members' Secrets hold, which their etcd started with.
// Each member keeps the CAs its Secret trusts, and its leaf is renewed by the operator's peer
// CA that issued it: the current one or, if a rotation was under way, the new one; a user's
// certificate (spec.tls.peer.secretName, gone with the spec) is kept as it is (keepPeer). No CA
// is made or rotated: a new one would be one no running member trusts. With no member
// Secret holding peer certificates, the port is frozen: pods that need them are not made
// (checkPeerSchemes says why).
func (t *tlsPass) peerLeavingSource(ctx context.Context) (*portSource, error) {
	cas, err := t.operatorPeerCAs(ctx)
	if err != nil {
		return nil, err
	}
	src := &portSource{leaving: true, cas: cas}
	for _, ca := range cas {
		t.caExpiry("peer", ca.CertPEM)
		if left := ca.Cert.NotAfter.Sub(t.now); left < ca.Cert.NotAfter.Sub(ca.Cert.NotBefore)/expiringShare && t.view.Expiring == "" {
			t.view.Expiring = fmt.Sprintf("the cluster's peer CA (Secret %s) expires at %s, and the peers' leaves with it; it is not rotated while the peers move off TLS: the move must finish before then, or add spec.tls.peer again to rotate it",
				member.PeerCASecretName(t.c.Name), ca.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	for _, ord := range t.ordinals {
		s, err := t.r.secret(ctx, t.c.Namespace, member.TLSSecretName(t.c.Name, ord))
		if err != nil {
			return nil, err
		}
		if s != nil && metav1.IsControlledBy(s, t.c) && heldPeer(s.Data) {
			src.template = s.Data
			return src, nil
		}
	}
	return &portSource{frozen: true}, nil
}

// operatorPeerCAs are the operator's peer CAs in <name>-peer-ca, when it is the cluster's:
// the current one, and the next while it rotates. None is made.
func (t *tlsPass) operatorPeerCAs(ctx context.Context) ([]*pki.KeyPair, error) {
	have, err := t.r.secret(ctx, t.c.Namespace, member.PeerCASecretName(t.c.Name))
	if err != nil || have == nil || !metav1.IsControlledBy(have, t.c) {
		return nil, err
	}
	var out []*pki.KeyPair
	for _, k := range [][2]string{{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}, {caNextCert, caNextKey}} {
		if kp, problem := pki.CheckCA(have.Data[k[0]], have.Data[k[1]], t.now); problem == nil {
			out = append(out, &kp)
		}
	}
	return out, nil
}

// heldPeer: a member Secret's data holds a peer key pair and the CAs it trusts.
func heldPeer(data map[string][]byte) bool {
	return len(data[member.KeyPeerCert]) > 0 && len(data[member.KeyPeerKey]) > 0 && len(data[member.KeyPeerCA]) > 0
}

// keepPeer fills in a member's peer keys while the port moves off TLS (peerLeavingSource):
// those its Secret holds (old), else the template's; the leaf renewed when one of src.cas
// issued it, kept as it is otherwise (a user's, whose names must then hold host, where the
// member's peers dial it).
func (t *tlsPass) keepPeer(data, old map[string][]byte, src *portSource, r pki.Request, ord int) error {
	held := old
	if !heldPeer(old) || !t.runsOn(ord) {
		// The Secret of a member scaled away is as it was then: it tells nothing of what the
		// members trust now.
		held, old = src.template, nil
	}
	host := member.Host(t.c.Name, t.c.Namespace, ord)
	data[member.KeyPeerCA] = held[member.KeyPeerCA]
	for _, ca := range src.cas {
		if pki.SignedBy(held[member.KeyPeerCert], []*x509.Certificate{ca.Cert}) != "" {
			return t.leaf(data, old, member.KeyPeerCert, member.KeyPeerKey, ca, r)
		}
	}
	_, problem := t.r.certs.check(held[member.KeyPeerCert], held[member.KeyPeerKey], held[member.KeyPeerCA], []string{host}, r.Usages, t.now)
	if problem != nil && !heldPeer(old) {
		// Another member's leaf, not one for this member's names, and no CA to issue one.
		t.fail("the peers move off TLS and member %s's Secret holds no peer certificate; none can be issued without the cluster's peer CA (Secret %s) and another member's does not fit it (%s): restore the member's Secret",
			r.CommonName, member.PeerCASecretName(t.c.Name), problem.Message)
		delete(data, member.KeyPeerCA)
		return nil
	}
	data[member.KeyPeerCert], data[member.KeyPeerKey] = held[member.KeyPeerCert], held[member.KeyPeerKey]
	certs, err := pki.ParseCertificates(held[member.KeyPeerCert])
	if err != nil || len(certs) == 0 {
		return nil
	}
	leaf := certs[0]
	t.leafServed(leaf.NotAfter)
	if left := leaf.NotAfter.Sub(t.now); left < leaf.NotAfter.Sub(leaf.NotBefore)/expiringShare && t.view.Expiring == "" {
		t.view.Expiring = fmt.Sprintf("the peer certificate the members hold (copied from the Secret spec.tls.peer named before it was removed) expires at %s, and nothing renews it: the peers' move off TLS must finish before then",
			leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
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
