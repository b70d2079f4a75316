package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// CA rotation (docs/tls.md; the steps and their rules: plan/rotation.go). A port rotates when
// the CAs its source asks the members to trust (the operator's CA Secret, whose new CA waits
// in next.crt while it rotates, or a user's Secret's ca.crt) are not those the members'
// Secrets trust. Each pass reads where the rotation stands from the world: the members'
// Secrets (what they trust, whose leaves they hold, and annotationLeavesOf), the pods' records
// of what they trust (member.AnnotationTrust), and what the running members' ports accept
// and serve (etcdutil.ProbeTLS). It then writes the step: the trust bundle or the new CAs
// alone into the members' Secrets and <name>-client-tls, leaves of the old CAs or the new
// ones, and, once the old CA is dropped, the new CA in place of the old in the CA Secret.

// annotationLeavesOf is the annotation of a member Secret recording that the port's leaves
// are those of the CAs it moves to: "<CAs by trust key, as a pod records them> <when>". It
// is written with the first new leaves, in the same update, and makes the step to new leaves
// one that is not taken back: a member down afterwards does not bring back the old leaves. It
// is removed from a Secret written while the port's leaves are not being switched
// (leavesOf).
func annotationLeavesOf(port string) string { return "etcd.operator.dev/" + port + "-leaves-of" }

// probeTimeout bounds one probe of a member's port: a member that cannot complete a TLS
// handshake this fast is not one a rotation can go on with.
const probeTimeout = 3 * time.Second

// rotationPort is one port's side of a rotation.
type rotationPort struct {
	name string
	src  *portSource
	// want is, by trust key, what the port's source asks the members to trust; servedKey is
	// the key whose CAs verify the leaves the port serves.
	want      map[string][]byte
	servedKey string
}

// rotate decides the rotation step of each port the pass can write, and makes the port's
// source what the step writes.
func (t *tlsPass) rotate(ctx context.Context, o *observation, peer, client *portSource) error {
	members, err := t.memberSecrets(ctx)
	if err != nil {
		return err
	}
	var ports []rotationPort
	// Nor a peer port moving off TLS (peerLeavingSource).
	if peer != nil && !peer.frozen && !peer.leaving {
		ports = append(ports, rotationPort{name: "peer", src: peer, want: map[string][]byte{member.KeyPeerCA: peer.trust},
			servedKey: member.KeyPeerCA})
	}
	// A client port moving off TLS keeps what its members hold (leavingSource): nothing rotates.
	if client != nil && !client.frozen && member.ClientTLS(t.c) {
		ports = append(ports, rotationPort{name: "client", src: client,
			want: map[string][]byte{member.KeyClientCA: client.trust, member.KeyServerCA: client.servedCA}, servedKey: member.KeyServerCA})
	}
	for _, p := range ports {
		if err := t.rotatePort(ctx, o, members, p); err != nil {
			return err
		}
	}
	return nil
}

// rotatePort decides and applies one port's step.
func (t *tlsPass) rotatePort(ctx context.Context, o *observation, members map[int]*corev1.Secret, p rotationPort) error {
	held := heldTrust(members, p.want)
	if t.idle(p.name) {
		// No etcd takes the port over TLS: none trusts what the Secrets hold of it.
		held = heldTrust(nil, p.want)
	}
	in := plan.RotationInput{Name: t.c.Name, Port: p.name, Want: held.wantFps, Held: held.fps, MembersKnown: o.membersKnown, Now: t.now}
	if p.name == "client" {
		// Applications and backups mount <name>-client-tls: they get its new certificate
		// from their kubelets, which the operator cannot ask.
		in.HoldersRefresh = t.r.holdersRefresh()
	}
	for _, m := range o.members {
		if ord, ok := o.memberOrdinal(m); ok {
			in.Members = append(in.Members, ord)
		}
	}
	record := leavesRecord(held.wantFps)
	in.Switched, in.SwitchedAt = switched(members, p.name, record)
	settled := plan.SameTrust(in.Held, in.Want)
	if !settled {
		var err error
		if in.OldLeaves, err = t.oldLeaves(ctx, members, p, held); err != nil {
			return err
		}
	}
	step, err := t.decide(ctx, o, p, held, in)
	if err != nil {
		return err
	}
	if err := t.applyStep(ctx, p, step, held, members, settled); err != nil {
		return err
	}
	if step.NewLeaves && !settled {
		p.src.leavesOf = record + " " + t.now.UTC().Format(time.RFC3339)
		if in.Switched {
			p.src.leavesOf = record + " " + in.SwitchedAt.UTC().Format(time.RFC3339)
		}
	}
	t.view.Rotations = append(t.view.Rotations, plan.PortRotation{Port: p.name, RotationStep: step})
	if p.name == "peer" {
		t.view.Status.PeerCARotation = step.Phase
	} else {
		t.view.Status.ClientCARotation = step.Phase
	}
	t.rotationEvents(p, step, in, held, settled)
	return nil
}

// decide is the port's step. The members' ports are asked only when what they answer can
// change it: the step when every member would answer as the rotation needs, and the step
// when none would, differ. Otherwise that step is the port's, and its wait is the one the
// members' answers do not decide (a pod to restart, a leaf to write, the client Secret's
// holders).
func (t *tlsPass) decide(ctx context.Context, o *observation, p rotationPort, held trustSet, in plan.RotationInput) (plan.RotationStep, error) {
	pods := t.rotationPods(o, p)
	in.Pods = assumeAnswers(pods, true)
	hopeful := plan.PlanRotation(in)
	in.Pods = assumeAnswers(pods, false)
	if hopeless := plan.PlanRotation(in); hopeless.Bundle == hopeful.Bundle && hopeless.NewLeaves == hopeful.NewLeaves {
		return hopeful, nil
	}
	var err error
	if in.Pods, err = t.probePods(ctx, o, p, held, pods); err != nil {
		return plan.RotationStep{}, err
	}
	return plan.PlanRotation(in), nil
}

// applyStep makes the port's source what the step writes: the trust bundle or the new CAs
// alone, the old CA's leaves until the step to new ones (renewed by the old CA, or the
// user's old leaf kept), and, once the old CA is dropped, the operator's new CA put in its
// place in the CA Secret (before the members' Secrets drop the old one: a pass that stops in
// between finds the rotation where it left it).
func (t *tlsPass) applyStep(ctx context.Context, p rotationPort, step plan.RotationStep, held trustSet,
	members map[int]*corev1.Secret, settled bool) error {
	src := p.src
	for k, want := range p.want {
		pem := want
		if step.Bundle {
			pem = held.bundle(k, want)
		}
		if k == p.servedKey && p.name == "client" {
			src.servedCA = pem
		} else {
			src.trust = pem
		}
	}
	if !step.NewLeaves {
		if src.ca != nil && src.ca.next != nil {
			if src.issuer == src.ca.next {
				src.issuer = src.ca.cur
			}
			if src.clientIssuer == src.ca.next {
				src.clientIssuer = src.ca.cur
			}
		}
		if src.issuer == nil && !settled {
			// A user's Secret may replace the operator's CA (spec.tls.<port> {} removed, then
			// set to the Secret while the move off TLS ran): each member then keeps a leaf of
			// the operator's own, renewed by it, until the step to new leaves; or, without
			// that CA, the leaf it holds (keepOwn).
			cas, err := t.operatorCAs(ctx, caSecretName(t.c, p.name))
			if err != nil {
				return err
			}
			src.issuer = heldIssuer(members, p.name, cas)
			src.keepOwn = src.issuer == nil && !sharedLeaf(members, p.name)
		}
		if src.issuer == nil {
			cert, key := heldLeaf(members, p.name)
			if cert == nil {
				// No member's Secret holds the leaf members serve: nothing of the port is
				// written until the new CAs may be used.
				src.frozen = true
				return nil
			}
			src.cert, src.key = cert, key
		}
	}
	if !step.Bundle && src.ca != nil && src.ca.next != nil {
		return t.swapCA(ctx, src.ca)
	}
	return nil
}

// swapCA puts the CA a rotation moved to in place of the old one in the operator's CA Secret:
// the old CA is no longer trusted, nor its key needed.
func (t *tlsPass) swapCA(ctx context.Context, pair *caPair) error {
	want := pair.secret.DeepCopy()
	want.Data[corev1.TLSCertKey], want.Data[corev1.TLSPrivateKeyKey] = pair.next.CertPEM, pair.next.KeyPEM
	want.Data[caKey] = pair.next.CertPEM
	delete(want.Data, caNextCert)
	delete(want.Data, caNextKey)
	if err := t.r.control.UpdateSecret(ctx, t.c, want); err != nil {
		return fmt.Errorf("putting the new CA in place in Secret %s: %w", pair.name, err)
	}
	pair.cur, pair.next, pair.secret = pair.next, nil, want
	return nil
}

// rotationEvents records (once the pass's writes are done) the steps this pass took.
func (t *tlsPass) rotationEvents(p rotationPort, step plan.RotationStep, in plan.RotationInput, held trustSet, settled bool) {
	var msg string
	reason := EventCARotationDropped
	switch {
	case settled:
		return
	case step.Phase == api.CARotationDroppingOld:
		msg = fmt.Sprintf("Every member serves a certificate of the new %s CA: the old CA is dropped, and the members are restarted onto the new one alone, one at a time", p.name)
	case step.NewLeaves && !in.Switched:
		reason = EventCARotationReissued
		msg = fmt.Sprintf("Every member trusts the new %s CA: the %s certificates are issued by it, with no restart", p.name, p.name)
	case p.src.userSecret != "" && !covers(held.fps, pki.Fingerprints(p.want[p.servedKey]), p.servedKey):
		reason = EventCARotationStarted
		msg = fmt.Sprintf("The CA of Secret %s changed: the members' Secrets trust the old and the new CA together, and the members are restarted onto both, one at a time",
			p.src.userSecret)
	default:
		return
	}
	t.events = append(t.events, func() { t.r.event(t.c, corev1.EventTypeNormal, reason, "%s", msg) })
}

// settled: no port's Secrets trust a bundle this pass; a pod that recorded nothing (made
// before CA rotation existed) then trusts what its Secret holds.
func (t *tlsPass) settled() bool {
	for _, r := range t.view.Rotations {
		if r.Bundle {
			return false
		}
	}
	return true
}

// memberSecrets are, by ordinal, the Secrets of the members that run or may run on what
// their Secret holds: those with a pod, and those in etcd's member list. The Secret of an
// ordinal with neither (a member scaled away, to be added again) is as it was the day its
// member went: what it trusts, its leaves and its records tell nothing of the members now, and
// this pass writes it anew before a pod is made on it. With no pod and no member known, every
// member's Secret is read: nothing then says which of them the members run on.
//
// They are read once a pass (the leaving sources and the rotation ask for them, before any
// member Secret is written: ensureMember comes after both).
func (t *tlsPass) memberSecrets(ctx context.Context) (map[int]*corev1.Secret, error) {
	if t.members != nil {
		return t.members, nil
	}
	out := map[int]*corev1.Secret{}
	for _, ord := range t.ordinals {
		if !t.runsOn(ord) {
			continue
		}
		s, err := t.r.secret(ctx, t.c.Namespace, member.TLSSecretName(t.c.Name, ord))
		if err != nil {
			return nil, err
		}
		if s != nil && metav1.IsControlledBy(s, t.c) {
			out[ord] = s
		}
	}
	t.members = out
	return out, nil
}

// leavesRecord is what annotationLeavesOf says of the CAs a port moves to (want, by trust
// key), before its time.
func leavesRecord(want map[string][]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		parts = append(parts, k+"="+strings.Join(want[k], ","))
	}
	return strings.Join(parts, ";")
}

// switched: a member's Secret records that the port's leaves are those of the CAs record
// names, and since when.
func switched(members map[int]*corev1.Secret, port, record string) (bool, time.Time) {
	for _, ord := range plan.SortedOrdinals(members) {
		v := members[ord].Annotations[annotationLeavesOf(port)]
		rec, at, _ := strings.Cut(v, " ")
		if v != "" && rec == record {
			since, _ := time.Parse(time.RFC3339, at)
			return true, since
		}
	}
	return false, time.Time{}
}

// heldIssuer is the CA of cas (the operator's) that issued the port's leaf the members'
// Secrets hold; nil when none did (a user's leaf).
func heldIssuer(members map[int]*corev1.Secret, port string, cas []*pki.KeyPair) *pki.KeyPair {
	cert, _ := heldLeaf(members, port)
	for _, ca := range cas {
		if cert != nil && pki.SignedBy(cert, []*x509.Certificate{ca.Cert}) != "" {
			return ca
		}
	}
	return nil
}

// sharedLeaf: every member Secret that holds a leaf of the port holds the same one (a user's).
func sharedLeaf(members map[int]*corev1.Secret, port string) bool {
	first, _ := heldLeaf(members, port)
	k := clientKeys
	if port == "peer" {
		k = peerKeys
	}
	for _, s := range members {
		if c := s.Data[k.cert]; len(c) > 0 && !bytes.Equal(c, first) {
			return false
		}
	}
	return true
}

// caSecretName is the Secret of the operator's CA of the port.
func caSecretName(c *api.EtcdCluster, port string) string {
	if port == "peer" {
		return member.PeerCASecretName(c.Name)
	}
	return member.ClientCASecretName(c.Name)
}

// heldLeaf is a user's leaf of the port (and its key) the members' Secrets hold: the one the
// members serve until the step to new leaves. nil when none does.
func heldLeaf(members map[int]*corev1.Secret, port string) (cert, key []byte) {
	certKey, keyKey := member.KeyPeerCert, member.KeyPeerKey
	if port == "client" {
		certKey, keyKey = member.KeyServerCert, member.KeyServerKey
	}
	for _, ord := range plan.SortedOrdinals(members) {
		if d := members[ord].Data; len(d[certKey]) > 0 && len(d[keyKey]) > 0 {
			return d[certKey], d[keyKey]
		}
	}
	return nil, nil
}

// covers: fps holds every CA of want under key.
func covers(fps map[string][]string, want []string, key string) bool {
	for _, fp := range want {
		if !slices.Contains(fps[key], fp) {
			return false
		}
	}
	return true
}

// signedByAny: the leaf certPEM opens with is signed by one of cas.
func signedByAny(certPEM []byte, cas []*x509.Certificate) bool {
	return pki.SignedBy(certPEM, cas) != ""
}
