package cluster

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// running: the cluster has member pods, whose etcd trusts the CAs it started with.
	running bool
	// earliest is the first expiry of the leaves the members serve.
	earliest time.Time
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
	// (a user's Secret that fails its checks, a CA that moved, a CA Secret that is broken):
	// the members keep what their Secrets hold for the port. The operator's client
	// certificates are still renewed when clientIssuer is set.
	frozen bool
}

// ensureTLS puts the cluster's certificates in place for every member ordinal the cluster may
// run (those of ensureMemberServices), and records in o.tls what the planner and status need.
// It never replaces a CA, and never writes a member's Secret from a user's Secret that fails
// its checks: the members keep the copies they have.
func (r *Reconciler) ensureTLS(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	if !member.PeerTLS(c) && !member.ClientTLS(c) {
		return nil
	}
	t := &tlsPass{r: r, c: c, now: r.now(), leafLife: r.leafLifetime(c), ordinals: wantedOrdinals(c, o), running: len(o.pods) > 0}
	t.view.Status = &api.TLSStatus{}
	var peer, client *portSource
	var err error
	if member.PeerTLS(c) {
		if peer, err = t.source(ctx, c.Spec.TLS.Peer, member.PeerCASecretName(c.Name), "peer", t.peerNames()); err != nil {
			return err
		}
	}
	if member.ClientTLS(c) {
		if client, err = t.source(ctx, c.Spec.TLS.Client, member.ClientCASecretName(c.Name), "client", t.clientNames()); err != nil {
			return err
		}
	}
	// Before anything is written: a port whose CAs would change is frozen.
	if err := t.freezeMovedTrust(ctx, peer, client); err != nil {
		return err
	}
	if client != nil && client.clientIssuer != nil {
		if err := t.ensureClientSecret(ctx, client); err != nil {
			return err
		}
	}
	for _, ord := range t.ordinals {
		ready, err := t.ensureMember(ctx, ord, peer, client)
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
	return nil
}

// checkPeerSchemes holds back the members whose claims hold data made with the other peer
// scheme (member.AnnotationPeerScheme): etcd keeps the peer URLs in its data and does not take
// new ones from its flags, so a member started on it with the other scheme would listen where
// its peers never dial. It happens when a cluster deleted with whenDeleted Retain is created
// again with another spec.tls (or without one, which now means peer TLS). The cluster says
// which claims and what to set.
func checkPeerSchemes(c *api.EtcdCluster, o *observation) {
	want := member.PeerScheme(c)
	var mismatched []string
	var have string
	for _, ord := range slices.Sorted(maps.Keys(o.claims)) {
		pvc := o.claims[ord]
		if pvc.Annotations[member.AnnotationMemberID] == "" || member.ClaimPeerScheme(pvc) == want {
			continue
		}
		if _, running := o.pods[ord]; running {
			continue
		}
		mismatched, have = append(mismatched, pvc.Name), member.ClaimPeerScheme(pvc)
		if !slices.Contains(o.tls.Unready, ord) {
			o.tls.Unready = append(o.tls.Unready, ord)
		}
	}
	if len(mismatched) == 0 || o.tls.Problem != nil {
		return
	}
	fix := "spec.tls: {} (plaintext peers)"
	if want == "http" {
		fix = "spec.tls.peer"
	}
	o.tls.Problem = &plan.TLSProblem{Reason: api.ReasonInvalidSpec, Message: fmt.Sprintf(
		"claims %s hold members made with %s peer URLs, and spec.tls asks for %s; their members are not started on them: "+
			"delete the cluster (its claims are retained) and create it again with %s, or delete the claims if their data is not needed",
		strings.Join(mismatched, ", "), have, want, fix)}
}

// leafLifetime is spec.tls.leafLifetime, or the default, never below the operator's minimum.
func (r *Reconciler) leafLifetime(c *api.EtcdCluster) time.Duration {
	d := DefaultLeafLifetime
	if c.Spec.TLS.LeafLifetime != nil {
		d = c.Spec.TLS.LeafLifetime.Duration
	}
	return max(d, r.minLifetime())
}

// caLifetime is spec.tls.caLifetime, or the default; at least three leaf lifetimes.
func (r *Reconciler) caLifetime(c *api.EtcdCluster) time.Duration {
	d := DefaultCALifetime
	if c.Spec.TLS.CALifetime != nil {
		d = c.Spec.TLS.CALifetime.Duration
	}
	return max(d, 3*r.leafLifetime(c))
}

func (r *Reconciler) minLifetime() time.Duration {
	if r.deps.MinLifetime > 0 {
		return r.deps.MinLifetime
	}
	return DefaultMinLifetime
}

// wantedOrdinals are the ordinals whose member may run: below spec.size, with a pod, or
// listed by etcd.
func wantedOrdinals(c *api.EtcdCluster, o *observation) []int {
	want := map[int]bool{}
	for ord := 0; ord < int(c.Spec.Size); ord++ {
		want[ord] = true
	}
	for ord := range o.pods {
		want[ord] = true
	}
	for _, m := range o.members {
		if ord, ok := o.memberOrdinal(m); ok {
			want[ord] = true
		}
	}
	return slices.Sorted(maps.Keys(want))
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
	s, err := t.r.deps.KubeClient.CoreV1().Secrets(t.c.Namespace).Get(ctx, from.SecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		t.fail("Secret %s (spec.tls.%s.secretName) does not exist", from.SecretName, port)
		return frozen, nil
	case err != nil:
		return nil, fmt.Errorf("getting secret %s: %w", from.SecretName, err)
	}
	cert, key, userCA := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], s.Data[caKey]
	leaf, problem := pki.Check(cert, key, userCA, names, pki.ServerAuth|pki.ClientAuth, t.now)
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
		issued, err := t.membersHold(ctx, port)
		if err != nil {
			return nil, err
		}
		if issued == "" && t.running {
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
	return t.write(ctx, name, corev1.SecretTypeTLS, data, have)
}

// ensureMember keeps member ord's own Secret, and says whether it holds every certificate its
// pod mounts, none expired. The keys of a frozen port are kept as they are; the others are
// issued, renewed or copied.
func (t *tlsPass) ensureMember(ctx context.Context, ord int, peer, client *portSource) (bool, error) {
	name := member.TLSSecretName(t.c.Name, ord)
	have, err := t.r.secret(ctx, t.c.Namespace, name)
	if err != nil {
		return false, err
	}
	if have != nil && !metav1.IsControlledBy(have, t.c) {
		t.fail("Secret %s, where member %s's certificates are kept, is not this cluster's; the operator leaves it alone: delete or rename it",
			name, member.Name(t.c.Name, ord))
		return false, nil
	}
	var old map[string][]byte
	if have != nil {
		old = have.Data
	}
	data := maps.Clone(old)
	if data == nil {
		data = map[string][]byte{}
	}
	self := member.Name(t.c.Name, ord)
	names := member.MemberNames(t.c, ord)
	if peer != nil && !peer.frozen {
		data[member.KeyPeerCA] = peer.trust
		if err := t.serving(data, old, member.KeyPeerCert, member.KeyPeerKey, peer,
			pki.Request{CommonName: self, DNSNames: names, Usages: pki.ServerAuth | pki.ClientAuth}); err != nil {
			return false, err
		}
	}
	if client != nil && !client.frozen {
		data[member.KeyServerCA] = client.servedCA
		data[member.KeyClientCA] = client.trust
		serverNames := append(slices.Clone(names), member.ClientServiceNames(t.c)...)
		serverNames = append(serverNames, "localhost")
		if err := t.serving(data, old, member.KeyServerCert, member.KeyServerKey, client,
			pki.Request{CommonName: self, DNSNames: serverNames, IPs: loopback, Usages: pki.ServerAuth}); err != nil {
			return false, err
		}
	}
	if client != nil && client.clientIssuer != nil {
		if err := t.leaf(data, old, member.KeyClientCert, member.KeyClientKey, client.clientIssuer,
			pki.Request{CommonName: self, Usages: pki.ClientAuth}); err != nil {
			return false, err
		}
	}
	if len(data) > 0 {
		if err := t.write(ctx, name, corev1.SecretTypeOpaque, data, have); err != nil {
			return false, err
		}
	}
	return complete(t.c, data, t.now), nil
}

// freezeMovedTrust freezes a port whose CAs would change for the members: etcd reads the CAs
// it trusts only when it starts, so members that run would refuse a certificate of another
// CA, and a member given the new CA alone would refuse theirs. It is the pass's Problem;
// nothing of the port is written, and members without its certificates are held back.
func (t *tlsPass) freezeMovedTrust(ctx context.Context, peer, client *portSource) error {
	wants := map[*portSource]map[string][]byte{}
	if peer != nil && !peer.frozen {
		wants[peer] = map[string][]byte{member.KeyPeerCA: peer.trust}
	}
	if client != nil && !client.frozen {
		wants[client] = map[string][]byte{member.KeyClientCA: client.trust, member.KeyServerCA: client.servedCA}
	}
	for _, ord := range t.ordinals {
		name := member.TLSSecretName(t.c.Name, ord)
		have, err := t.r.secret(ctx, t.c.Namespace, name)
		if err != nil {
			return err
		}
		if have == nil || !metav1.IsControlledBy(have, t.c) {
			continue
		}
		for src, want := range wants {
			if key, changed := trustChanged(have.Data, want); changed && !src.frozen {
				t.fail("the CA members trust changed (%s of Secret %s differs from what %s holds now); this operator version does not move a running cluster to another CA: put back the CA members trust (docs/tls.md)",
					key, name, t.sourceSecret())
				src.frozen = true
			}
		}
	}
	return nil
}

// trustKeys are the keys of a member's Secret that say which CAs it trusts and verifies by.
var trustKeys = []string{member.KeyPeerCA, member.KeyClientCA, member.KeyServerCA}

// trustChanged reports the first key of trustKeys whose value old holds and want changes.
func trustChanged(old, want map[string][]byte) (string, bool) {
	for _, k := range trustKeys {
		if len(old[k]) > 0 && len(want[k]) > 0 && !bytes.Equal(old[k], want[k]) {
			return k, true
		}
	}
	return "", false
}

// sourceSecret names the user's Secrets spec.tls names, for messages.
func (t *tlsPass) sourceSecret() string {
	var names []string
	for _, s := range []*api.TLSSource{t.c.Spec.TLS.Peer, t.c.Spec.TLS.Client} {
		if s != nil && s.SecretName != "" && !slices.Contains(names, s.SecretName) {
			names = append(names, s.SecretName)
		}
	}
	if len(names) == 0 {
		return "the operator's CA Secret"
	}
	return "Secret " + strings.Join(names, " / ")
}

// serving fills in a port's serving key pair: the user's, copied, or one of the operator's CA
// (leaf).
func (t *tlsPass) serving(data, old map[string][]byte, certKey, keyKey string, src *portSource, r pki.Request) error {
	if src.issuer == nil {
		data[certKey], data[keyKey] = src.cert, src.key
		return nil
	}
	return t.leaf(data, old, certKey, keyKey, src.issuer, r)
}

// leaf fills in a key pair issued by ca for r: the one old holds while it is still good
// (issued by ca for r's names and usages, and not due for renewal), else a new one.
func (t *tlsPass) leaf(data, old map[string][]byte, certKey, keyKey string, ca *pki.KeyPair, r pki.Request) error {
	names := append(slices.Clone(r.DNSNames), ipStrings(r.IPs)...)
	if old != nil {
		cert, problem := pki.Check(old[certKey], old[keyKey], ca.CertPEM, names, r.Usages, t.now)
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

// write creates the Secret, or updates it when its data differs.
func (t *tlsPass) write(ctx context.Context, name string, typ corev1.SecretType, data map[string][]byte, have *corev1.Secret) error {
	if have == nil {
		_, err := t.r.control.CreateSecret(ctx, t.c, t.secret(name, typ, data))
		return err
	}
	if sameData(have.Data, data) {
		return nil
	}
	want := have.DeepCopy()
	want.Data = data
	return t.r.control.UpdateSecret(ctx, t.c, want)
}

// complete reports whether a member's Secret data holds every key its pod mounts, and
// whether its certificates are still valid at now: a member started on an expired one would
// be refused by its peers or clients.
func complete(c *api.EtcdCluster, data map[string][]byte, now time.Time) bool {
	for _, k := range member.TLSKeys(c) {
		if len(data[k]) == 0 {
			return false
		}
	}
	for _, k := range []string{member.KeyPeerCert, member.KeyServerCert, member.KeyClientCert} {
		if len(data[k]) == 0 {
			continue
		}
		certs, err := pki.ParseCertificates(data[k])
		if err != nil || len(certs) == 0 || !now.Before(certs[0].NotAfter) {
			return false
		}
	}
	return len(data) > 0
}

// loopback is the address tools inside a member's pod dial.
var loopback = []net.IP{net.IPv4(127, 0, 0, 1)}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func sameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func sameNames(have, want []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(have)), slices.Sorted(slices.Values(want)))
}
