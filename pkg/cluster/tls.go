package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// The certificates of a cluster with spec.tls (docs/tls.md). The operator keeps, owned by the
// cluster: its CAs (<name>-peer-ca when it issues the peer certificates, <name>-client-ca
// whenever the client port uses TLS), the client certificate for applications, the operator
// and backups (<name>-client-tls), and one Secret per member (member.TLSSecretName) that the
// member's pod mounts. A Secret spec.tls names is checked, then copied into the members'
// Secrets: pods never mount a user's Secret, so one that goes bad never reaches a member, and
// a renewed one reaches them all by the same copy. Leaves are renewed at two thirds of their
// life; the kubelet refreshes the mounted files and etcd reads its key pair again on each new
// connection, so no member restarts for it (docs/tls-reload.md).

// Lifetimes of what the operator issues, when spec.tls leaves them out.
const (
	DefaultLeafLifetime = 90 * 24 * time.Hour
	DefaultCALifetime   = 5 * 365 * 24 * time.Hour
	// DefaultMinLifetime is the shortest leafLifetime the operator accepts; tests lower it
	// (--tls-min-lifetime) to see renewals happen.
	DefaultMinLifetime = time.Hour
)

// expiringShare: a certificate from a user's Secret with less than this share of its life
// left is reported (CertificateExpiring). cert-manager renews at two thirds by default, so a
// certificate this close to its end was not renewed.
const expiringShare = 6

// tlsPass is one pass's work on a cluster's certificates.
type tlsPass struct {
	r    *Reconciler
	c    *api.EtcdCluster
	now  time.Time
	view plan.TLSView
	// leafLife is how long the leaves issued this pass are valid.
	leafLife time.Duration
	// ordinals are the members whose certificates are kept (wantedOrdinals).
	ordinals []int
	// running says, by port ("peer", "client"), that member pods run whose etcd serves the
	// port over TLS: it trusts the CAs it started with.
	running map[string]bool
	// client: the client port serves TLS, or some member pod still does (clientTLSInUse);
	// peer: the peer port does, or member pods do or are made to (peerTLSInUse).
	client, peer bool
	// peerMounted: member pods built now mount the peer certificates (they listen for peers
	// over TLS; observation.peer).
	peerMounted bool
	// clientIdle: member pods run and none serves the client port over TLS, so no etcd trusts
	// what member Secrets hold of it (left there by an earlier move off TLS): a move onto TLS
	// may replace it.
	clientIdle bool
	// peerIdle: the same of the peer port (no pod takes TLS from its peers; what member
	// Secrets hold of it was left by an earlier move off TLS).
	peerIdle bool
	// inUse are the ordinals with a pod or in etcd's member list (runsOn).
	inUse map[int]bool
	// members are the Secrets memberSecrets read, kept for the rest of the pass's reads.
	members map[int]*corev1.Secret
	// earliest is the first expiry of the leaves the members serve.
	earliest time.Time
	// memberTrust is, by ordinal, what each member's Secret trusts as this pass left it
	// (member.TrustKeys): the record a pod made now gets (observation.trustFor).
	memberTrust map[int]map[string][]byte
	// events are recorded once every write of the pass is done: a step of a rotation is
	// said only once it is taken.
	events []func()
}

// portSource is where the certificates of one port (peer or client) come from.
type portSource struct {
	// issuer is the operator's CA that issues the port's serving certificates; nil when a
	// user's Secret provides them (cert, key).
	issuer    *pki.KeyPair
	cert, key []byte
	// servedCA verifies the port's serving certificates; trust is what the port trusts of
	// those who connect to it.
	servedCA, trust []byte
	// clientIssuer is the operator's client CA, which issues the SAN-less client certificates
	// of member-init, the operator, backups and applications; nil for the peer port.
	clientIssuer *pki.KeyPair
	// frozen: the port's serving certificates and the CAs it trusts cannot change this pass
	// (a user's Secret that fails its checks, a CA Secret that is broken): the members keep
	// what their Secrets hold for the port. The operator's client certificates are still
	// renewed when clientIssuer is set.
	frozen bool
	// ca is the operator's CA Secret of the port (its client CA for the client port), nil
	// with a user's Secret for peers; userSecret names the user's Secret, if any.
	ca         *caPair
	userSecret string
	// leavesOf, when set, is the rotation's record (annotationLeavesOf) that the port's leaves
	// are those of the CAs it moves to, written on every member Secret this pass writes.
	leavesOf string
	// leaving: the peer port moves off TLS (peerLeavingSource). Each member keeps what its
	// Secret holds, its leaf renewed by whichever of cas (the operator's peer CAs) issued it; a
	// member whose Secret holds none starts from template, another member's.
	leaving  bool
	cas      []*pki.KeyPair
	template map[string][]byte
	// keepOwn: a rotation's step keeps the leaves the members hold, which are not one shared
	// leaf of a user's (they are the operator's, issued by a CA no longer at hand): each
	// member's Secret keeps its own (serving).
	keepOwn bool
}

// ensureTLS puts the cluster's certificates in place for every member ordinal the cluster may
// run (those of ensureMemberServices), and records in o.tls what the planner and status need.
// It replaces a CA only by a rotation (tls_rotation.go), and never writes a member's Secret
// from a user's Secret that fails its checks: the members keep the copies they have.
func (r *Reconciler) ensureTLS(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	modes := clientModes(c, o.pods)
	if !peerTLSInUse(c, o) && !clientTLSInUse(c, modes) {
		return nil
	}
	t := &tlsPass{r: r, c: c, now: r.now(), leafLife: r.leafLifetime(c), ordinals: wantedOrdinals(c, o),
		client: clientTLSInUse(c, modes), peer: peerTLSInUse(c, o), running: map[string]bool{"peer": peerTLSRunning(c, o.pods)},
		memberTrust: map[int]map[string][]byte{}}
	for _, m := range modes {
		t.running["client"] = t.running["client"] || m.TLS()
	}
	t.clientIdle = len(o.pods) > 0 && !t.running["client"]
	t.peerIdle = len(o.pods) > 0 && !t.running["peer"]
	t.inUse = ordinalsInUse(o)
	t.view.Status = &api.TLSStatus{}
	peer, client, err := t.sources(ctx)
	if err != nil {
		return err
	}
	o.holdClientMove(c, client)
	o.holdPeerMove(c, peer)
	o.peerCertsHeld = peer != nil && peer.leaving
	t.peerMounted = o.peer.Listen.TLS() || len(o.peer.Listen) == 0 && member.PeerTLS(c)
	// Before anything is written: where each port's CA rotation stands, and so which CAs
	// the members' Secrets trust and whose leaves they hold.
	if err := t.rotate(ctx, o, peer, client); err != nil {
		return err
	}
	if client != nil && client.clientIssuer != nil {
		if err := t.ensureClientSecret(ctx, client); err != nil {
			return err
		}
	}
	for _, ord := range t.ordinals {
		ready, err := t.ensureMember(ctx, ord, peer, client, o.needsClientCerts(c, ord))
		if err != nil {
			return err
		}
		if !ready {
			t.view.Unready = append(t.view.Unready, ord)
		}
	}
	if !t.earliest.IsZero() {
		t.view.Status.LeafExpiry = &metav1.Time{Time: t.earliest}
	}
	// A Problem or an expiring certificate is what Degraded says; its Warning Event is
	// recorded when the condition turns to it (status_write.go), not on every pass.
	o.tls = t.view
	o.memberTrust, o.trustSettled = t.memberTrust, t.settled()
	for _, record := range t.events {
		record()
	}
	return nil
}

// sources are where the ports' certificates come from this pass; nil for a port without
// TLS.
func (t *tlsPass) sources(ctx context.Context) (peer, client *portSource, err error) {
	c := t.c
	switch {
	case member.PeerTLS(c):
		peer, err = t.source(ctx, c.Spec.TLS.Peer, member.PeerCASecretName(c.Name), "peer", t.peerNames())
	case t.peer:
		peer, err = t.peerLeavingSource(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	switch {
	case member.ClientTLS(c):
		client, err = t.source(ctx, c.Spec.TLS.Client, member.ClientCASecretName(c.Name), "client", t.clientNames())
	case t.client:
		client, err = t.leavingSource(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	return peer, client, nil
}

// peerNames are the names a user's peer certificate must carry: the host of every member's
// peer URL, as its peers dial it.
func (t *tlsPass) peerNames() []string {
	var names []string
	for _, ord := range t.ordinals {
		names = append(names, member.Host(t.c.Name, t.c.Namespace, ord))
	}
	return names
}

// clientNames are the names a user's client-port certificate must carry: every member's
// host, as member-init and backups dial it, and the client Service's, as applications and
// the operator do.
func (t *tlsPass) clientNames() []string {
	return append(t.peerNames(), member.ClientServiceHost(t.c))
}

// secret is a Secret of the cluster's, owned by it.
func (t *tlsPass) secret(name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.c.Namespace, Labels: member.ClusterLabels(t.c.Name),
			OwnerReferences: []metav1.OwnerReference{member.OwnerReference(t.c)}},
		Type: typ,
		Data: data,
	}
}

// ensureClientSecret keeps <name>-client-tls: a client certificate of the operator's client
// CA, and the CA that verifies the members' client port.
func (t *tlsPass) ensureClientSecret(ctx context.Context, client *portSource) error {
	name := member.ClientTLSSecretName(t.c.Name)
	t.view.Status.ClientSecretName = name
	have, err := t.r.secret(ctx, t.c.Namespace, name)
	if err != nil {
		return err
	}
	if have != nil && !metav1.IsControlledBy(have, t.c) {
		t.fail("Secret %s, where the cluster keeps a client certificate, is not this cluster's; the operator leaves it alone: delete or rename it", name)
		return nil
	}
	var old map[string][]byte
	if have != nil {
		old = have.Data
	}
	data := map[string][]byte{caKey: client.servedCA}
	if client.frozen {
		// The CA that verifies the members stays the one they serve with.
		if len(old[caKey]) == 0 {
			return nil
		}
		data[caKey] = old[caKey]
	}
	if err := t.leaf(data, old, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, client.clientIssuer,
		pki.Request{CommonName: name, Usages: pki.ClientAuth}); err != nil {
		return err
	}
	return t.write(ctx, name, corev1.SecretTypeTLS, data, nil, have)
}

// serving fills in a port's serving key pair: the user's, copied, or one of the operator's CA
// (leaf). While a rotation keeps each member's own leaf (keepOwn), a member's Secret keeps
// its own, and one without gets the user's only if it holds the member's host.
func (t *tlsPass) serving(data, old map[string][]byte, src *portSource, k portKeys, r pki.Request, ord int) error {
	if src.issuer != nil {
		return t.leaf(data, old, k.cert, k.key, src.issuer, r)
	}
	cert, key := src.cert, src.key
	if src.keepOwn && len(old[k.cert]) > 0 && len(old[k.key]) > 0 {
		cert, key = old[k.cert], old[k.key]
	} else if src.keepOwn && !holdsHost(cert, member.Host(t.c.Name, t.c.Namespace, ord)) {
		t.fail("member %s's Secret holds no %s certificate of its own, and the one the members serve is not for its names; it gets one when the %s CA rotation switches the leaves",
			r.CommonName, k.port, k.port)
		return nil
	}
	data[k.cert], data[k.key] = cert, key
	return nil
}

// holdsHost: the leaf certPEM opens with is valid for host.
func holdsHost(certPEM []byte, host string) bool {
	certs, err := pki.ParseCertificates(certPEM)
	return err == nil && len(certs) > 0 && certs[0].VerifyHostname(host) == nil
}

// leaf fills in a key pair issued by ca for r: the one old holds while it is still good
// (issued by ca for r's names and usages, and not due for renewal), else a new one.
func (t *tlsPass) leaf(data, old map[string][]byte, certKey, keyKey string, ca *pki.KeyPair, r pki.Request) error {
	names := append(slices.Clone(r.DNSNames), ipStrings(r.IPs)...)
	if old != nil {
		cert, problem := t.r.certs.check(old[certKey], old[keyKey], ca.CertPEM, names, r.Usages, t.now)
		if problem == nil && t.now.Before(pki.RenewAt(cert)) && sameNames(cert.DNSNames, r.DNSNames) {
			data[certKey], data[keyKey] = old[certKey], old[keyKey]
			if r.Usages&pki.ServerAuth != 0 {
				t.leafServed(cert.NotAfter)
			}
			return nil
		}
	}
	r.Lifetime = t.leafLife
	kp, err := pki.Issue(*ca, r, t.now)
	if err != nil {
		return fmt.Errorf("issuing a certificate for %s: %w", r.CommonName, err)
	}
	data[certKey], data[keyKey] = kp.CertPEM, kp.KeyPEM
	if r.Usages&pki.ServerAuth != 0 {
		t.leafServed(kp.Cert.NotAfter)
	}
	return nil
}

// write creates the Secret, or updates it when its data or the given annotations differ; an
// annotation given as "" is one the Secret must not carry.
func (t *tlsPass) write(ctx context.Context, name string, typ corev1.SecretType, data map[string][]byte, annotations map[string]string,
	have *corev1.Secret) error {
	if have == nil {
		s := t.secret(name, typ, data)
		for k, v := range annotations {
			if v != "" {
				if s.Annotations == nil {
					s.Annotations = map[string]string{}
				}
				s.Annotations[k] = v
			}
		}
		_, err := t.r.control.CreateSecret(ctx, t.c, s)
		return err
	}
	changed := !sameData(have.Data, data)
	for k, v := range annotations {
		changed = changed || have.Annotations[k] != v
	}
	if !changed {
		return nil
	}
	want := have.DeepCopy()
	want.Data = data
	for k, v := range annotations {
		switch {
		case v == "":
			delete(want.Annotations, k)
		case want.Annotations == nil:
			want.Annotations = map[string]string{k: v}
		default:
			want.Annotations[k] = v
		}
	}
	return t.r.control.UpdateSecret(ctx, t.c, want)
}
