package cluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
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

// portKeys are the keys of a port in a member's Secret: its serving key pair, the CAs that
// verify it (served), and every CA key the port trusts.
type portKeys struct {
	port, cert, key, served string
	trust                   []string
}

var (
	peerKeys   = portKeys{port: "peer", cert: member.KeyPeerCert, key: member.KeyPeerKey, served: member.KeyPeerCA, trust: []string{member.KeyPeerCA}}
	clientKeys = portKeys{port: "client", cert: member.KeyServerCert, key: member.KeyServerKey, served: member.KeyServerCA,
		trust: []string{member.KeyServerCA, member.KeyClientCA}}
)

// held: a member Secret's data holds the port's key pair and the CAs it trusts.
func (k portKeys) held(data map[string][]byte) bool {
	ok := len(data[k.cert]) > 0 && len(data[k.key]) > 0
	for _, key := range k.trust {
		ok = ok && len(data[key]) > 0
	}
	return ok
}

// peerLeavingSource is where the peer port's certificates come from while it moves off TLS
// (spec.tls.peer removed): what the members' Secrets hold, which their etcd started with
// (keepLeaving). No CA is made or rotated: a new one would be one no running member trusts.
// The operator's peer CA is reported as it nears its end, since every leaf it renews ends
// with it.
func (t *tlsPass) peerLeavingSource(ctx context.Context) (*portSource, error) {
	cas, err := t.operatorCAs(ctx, member.PeerCASecretName(t.c.Name))
	if err != nil {
		return nil, err
	}
	for _, ca := range cas {
		t.caExpiry("peer", ca.CertPEM)
		if left := ca.Cert.NotAfter.Sub(t.now); left < ca.Cert.NotAfter.Sub(ca.Cert.NotBefore)/expiringShare && t.view.Expiring == "" {
			t.view.Expiring = fmt.Sprintf("the cluster's peer CA (Secret %s) expires at %s, and the peers' leaves with it; it is not rotated while the peers move off TLS: the move must finish before then, or add spec.tls.peer again to rotate it",
				member.PeerCASecretName(t.c.Name), ca.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	template, err := t.heldTemplate(ctx, peerKeys)
	if err != nil || template == nil {
		return &portSource{frozen: true}, err
	}
	return &portSource{leaving: true, cas: cas, template: template}, nil
}

// leavingSource is the same for the client port (spec.tls.client removed, member pods still
// serving it). The operator's client CA goes on issuing the client certificates of
// member-init, the operator, backups and applications.
func (t *tlsPass) leavingSource(ctx context.Context) (*portSource, error) {
	cas, err := t.operatorCAs(ctx, member.ClientCASecretName(t.c.Name))
	if err != nil {
		return nil, err
	}
	var issuer *pki.KeyPair
	if len(cas) > 0 {
		issuer = cas[0]
	}
	template, err := t.heldTemplate(ctx, clientKeys)
	if err != nil || template == nil {
		// No member Secret holds them: the members keep what they have.
		return &portSource{frozen: true, clientIssuer: issuer}, err
	}
	return &portSource{leaving: true, cas: cas, template: template, clientIssuer: issuer,
		servedCA: template[member.KeyServerCA], trust: template[member.KeyClientCA]}, nil
}

// operatorCAs are the operator's CAs in Secret name, when it is the cluster's: the current
// one, and the next while it rotates. None is made.
func (t *tlsPass) operatorCAs(ctx context.Context, name string) ([]*pki.KeyPair, error) {
	have, err := t.r.secret(ctx, t.c.Namespace, name)
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

// heldTemplate is the data of the first Secret, of a member that runs (memberSecrets), that
// holds the port's keys; nil when none does.
func (t *tlsPass) heldTemplate(ctx context.Context, k portKeys) (map[string][]byte, error) {
	members, err := t.memberSecrets(ctx)
	if err != nil {
		return nil, err
	}
	for _, ord := range plan.SortedOrdinals(members) {
		if k.held(members[ord].Data) {
			return members[ord].Data, nil
		}
	}
	return nil, nil
}

// keepLeaving fills in a member's keys of a port moving off TLS: those its Secret holds (old),
// else the template's. What it trusts stays; its leaf is renewed by the operator's CA of
// src.cas that issued it (the current one or, if a rotation was under way, the new one), kept
// as it is otherwise (a user's, whose names must then hold the member's host, where it is
// dialled).
func (t *tlsPass) keepLeaving(data, old map[string][]byte, src *portSource, k portKeys, r pki.Request, ord int) error {
	held := old
	if !k.held(old) || !t.runsOn(ord) {
		// The Secret of a member scaled away is as it was then: it tells nothing of what the
		// members trust now.
		held, old = src.template, nil
	}
	for _, key := range k.trust {
		data[key] = held[key]
	}
	for _, ca := range src.cas {
		if pki.SignedBy(held[k.cert], []*x509.Certificate{ca.Cert}) != "" {
			return t.leaf(data, old, k.cert, k.key, ca, r)
		}
	}
	host := member.Host(t.c.Name, t.c.Namespace, ord)
	if _, problem := t.r.certs.check(held[k.cert], held[k.key], held[k.served], []string{host}, r.Usages, t.now); problem != nil && old == nil {
		// Another member's leaf, not one for this member's names, and no CA to issue one.
		t.fail("the %s port moves off TLS and member %s's Secret holds no certificate of its own for it; none can be issued without the cluster's %s CA and another member's does not fit it (%s): restore the member's Secret",
			k.port, r.CommonName, k.port, problem.Message)
		for _, key := range k.trust {
			delete(data, key)
		}
		return nil
	}
	data[k.cert], data[k.key] = held[k.cert], held[k.key]
	certs, err := pki.ParseCertificates(held[k.cert])
	if err != nil || len(certs) == 0 {
		return nil
	}
	leaf := certs[0]
	t.leafServed(leaf.NotAfter)
	if left := leaf.NotAfter.Sub(t.now); left < leaf.NotAfter.Sub(leaf.NotBefore)/expiringShare && t.view.Expiring == "" {
		t.view.Expiring = fmt.Sprintf("the %s certificate the members hold (copied from the Secret spec.tls.%s named before it was removed) expires at %s, and nothing renews it: the move off TLS must finish before then",
			k.port, k.port, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}
