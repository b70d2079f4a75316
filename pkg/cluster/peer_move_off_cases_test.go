package cluster

// Cases of the move of a running cluster's peers off TLS that a review found; each test failed
// before its fix (the comments say what happened then).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// runningPodsOn makes running member pods of c listening on listen for the given ordinals, each
// recording the trust its Secret holds now (as a pod made on it would).
func runningPodsOn(t *testing.T, f *fixture, c *api.EtcdCluster, listen peermove.Listen, peerTrust bool, ordinals ...int) map[int]*corev1.Pod {
	t.Helper()
	out := map[int]*corev1.Pod{}
	for _, ord := range ordinals {
		data := f.secretData(member.TLSSecretName(c.Name, ord))
		p := member.Pod(c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2},
			MemberID: uint64(ord + 1), PeerListen: listen, Trust: member.TrustStamp(data, peerTrust, false)}, testInitImage)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.0.%d", ord+1)}
		out[ord] = p
	}
	return out
}

// A cluster deleted with whenDeleted Retain while its peers used TLS, created again
// without spec.tls (plaintext peers where the defaulting admission policy is not served): the
// claims hold https peer URLs, so unmovedPeers (now in both directions) makes the pods listen
// over TLS, peerTLSInUse turns ensureTLS on, and tlsPass reads spec.tls.leafLifetime from a
// nil spec.tls: the operator panics (no recover in pkg/controller's loop), and every cluster
// it runs goes unmanaged while it crash-loops. Before the change ensureTLS returned early here
// and checkPeerSchemes held the claims with InvalidSpec.
func TestPeerRecreatedWithoutSpecTLSOverTLSClaims(t *testing.T) {
	c := newCluster(3) // no spec.tls at all
	f := newFixture(t, c)
	claims := map[int]*corev1.PersistentVolumeClaim{}
	for ord := range 3 {
		claims[ord] = movedClaim(ord, "")
		claims[ord].Annotations[member.AnnotationPeerScheme] = "https"
	}
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, claims: claims}
	o.observePeers()
	f.r.now = func() time.Time { return tlsEpoch }
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("ensureTLS panicked on a cluster without spec.tls over claims made with TLS peers (pods made listening on %v): %v",
					o.peer.Listen, r)
			}
		}()
		if err := f.r.ensureTLS(context.Background(), c, o); err != nil {
			t.Fatal(err)
		}
	}()
	checkPeerSchemes(c, o)
	if o.tls.Problem == nil || o.tls.Problem.Reason != api.ReasonInvalidSpec {
		t.Errorf("problem %+v; want the claims held with InvalidSpec", o.tls.Problem)
	}
}

// spec.tls.peer ({}: the operator's CA) removed, then set back halfway with a user's
// Secret (the CRD allows it: remove, then add; docs/tls.md says to move onto other
// certificates by moving off TLS and back on). The CAs the members trust change, so a peer CA
// rotation starts (operator CA -> user CA, a rotation no earlier version could reach), with
// pods listening over TLS that trust only the operator's CA. Until every pod trusts both, the
// rotation keeps "the held leaf" (heldLeaf), written for a user's leaf shared by every member:
// here it is member 0's own leaf, and it is copied into every member's Secret. Members 1 and 2
// then serve a certificate for demo-0's names (etcd reloads it without a restart), which their
// peers refuse when dialling demo-1 / demo-2: only links through member 0 work, and the rollout
// that restarts each pod onto the trust bundle loses quorum when it restarts member 0.
func TestPeerReAddedWithUserSecretMidMoveOff(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, nil)
	ca := userCA(t, "user CA", tlsEpoch.Add(-time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
	f := newFixture(t, on, userSecret(t, "peers", ca, names, tlsEpoch, 90*24*time.Hour))
	tlsPassAt(t, f, on, tlsEpoch)

	// Halfway through the first hop off TLS: member 0's URL on http:2382, the others still on
	// https:2380; every pod listens on both. spec.tls.peer is set back, naming the user's Secret.
	o := setBackMidMoveOff(t, f, withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil))
	checkOwnLeaves(t, f, 3, member.KeyPeerCert, o)
}

// Scale-up during the move off, onto an ordinal whose Secret was left by a member
// scaled away before a rotation of the peer CA (tls_rotation_scale_test.go: such a Secret is
// kept as it was). keepPeer keeps what that stale Secret holds: it trusts the dropped CA only
// and holds a leaf of it, which is not renewed (no CA of <name>-peer-ca signed it) but still
// passes its check against its own stale CA. The new member joins presenting a leaf no member
// trusts, and trusting none of theirs. On TLS (ensureMember's other branch) its trust and leaf
// are written from the current CA.
func TestPeerMoveOffScaleUpOverStaleSecret(t *testing.T) {
	s := newRotationSim(t, withTLS(newCluster(4), &api.TLSSource{}, nil))
	s.start()
	s.scaleTo(3)
	s.untilDone("scaled down")
	s.c.Annotations = map[string]string{api.AnnotationRotateCA: "2026-11-25"}
	s.untilDone("rotating")
	current := s.f.secretData("demo-peer-ca")["tls.crt"]
	stale := s.f.secretData(member.TLSSecretName("demo", 3))[member.KeyPeerCA]
	if slices.Equal(pki.Fingerprints(current), pki.Fingerprints(stale)) {
		t.Fatal("the CA did not rotate")
	}

	// spec.tls.peer removed and the cluster scaled back to four at once.
	off := withTLS(newCluster(4), nil, nil)
	o := &observation{cluster: off, pods: map[int]*corev1.Pod{}, membersKnown: true, members: membersAt(off, tlsPeer, tlsPeer, tlsPeer)}
	for ord, m := range s.members {
		o.pods[ord] = m.pod
	}
	o.observePeers()
	s.f.r.now = func() time.Time { return s.now }
	if err := s.f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	d := s.f.secretData(member.TLSSecretName("demo", 3))
	if got := pki.Fingerprints(d[member.KeyPeerCA]); !slices.Equal(got, pki.Fingerprints(current)) {
		t.Errorf("new member 3's Secret trusts %v; the members run on the current peer CA %v (stale %v)", got, pki.Fingerprints(current), pki.Fingerprints(stale))
	}
	cur, _ := pki.ParseCertificates(current)
	if pki.SignedBy(d[member.KeyPeerCert], cur) == "" {
		t.Error("new member 3's peer leaf is not of the current peer CA: the running members refuse it")
	}
	if !slices.Contains(o.tls.Unready, 3) && o.tls.Problem == nil && pki.SignedBy(d[member.KeyPeerCert], cur) == "" {
		t.Error("and member 3 is not even held back: its pod is made on that Secret")
	}
}

// The operator's peer CA near its end while the peers move off TLS (a move stuck on a
// member down, or one started shortly before the CA's rotation was due: none starts while
// leaving). The leaves are renewed, but pki.Issue caps them at the CA's end, and nothing says
// the CA is ending: on TLS, ensureCA reports CertificateExpiring in its last sixth (and rotates
// it at two thirds); here neither, and status.tls loses peerCAExpiry. When the CA expires every
// peer leaf expires with it, and the members, still on https URLs, refuse each other. The only
// warning comes after that, and blames a user's Secret.
func TestPeerCAEndingWhileMovingOff(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, nil)
	on.Spec.TLS.LeafLifetime = &metav1.Duration{Duration: 24 * time.Hour}
	on.Spec.TLS.CALifetime = &metav1.Duration{Duration: 72 * time.Hour}
	f := newFixture(t, on)
	tlsPassAt(t, f, on, tlsEpoch)

	off, o := movingOff(t, 0, 1, 2)
	off.Spec.TLS.LeafLifetime, off.Spec.TLS.CALifetime = on.Spec.TLS.LeafLifetime, on.Spec.TLS.CALifetime
	o.cluster = off
	// Five hours before the CA's end: less than a sixth of its 72 hours left.
	at := tlsEpoch.Add(67 * time.Hour)
	f.r.now = func() time.Time { return at }
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	leaf, _ := pki.ParseCertificates(f.secretData(member.TLSSecretName("demo", 0))[member.KeyPeerCert])
	caEnd := tlsEpoch.Add(72 * time.Hour)
	if len(leaf) > 0 && leaf[0].NotAfter.After(caEnd) {
		t.Fatalf("leaf ends at %s, after the CA", leaf[0].NotAfter)
	}
	if !strings.Contains(o.tls.Expiring, "peer") {
		t.Errorf("the peer CA, which every peer leaf in use ends with (member 0's at %s), expires at %s while the peers still take TLS, and nothing is reported (expiring %q, peerCAExpiry %v)",
			leaf[0].NotAfter.UTC().Format(time.RFC3339), caEnd.Format(time.RFC3339), o.tls.Expiring, o.tls.Status.PeerCAExpiry)
	}
}

// spec.tls.peer named a user's Secret; it is removed, the move off TLS finishes
// (every pod plaintext), and it is added back as {} (the operator's CA), the way docs/tls.md
// gives to move onto other certificates. The member Secrets keep the user's peer CA after the
// move (by design), so ensureCA's newCA finds "certificates it issued in use" (membersHold
// looks only at whether peer-ca.crt is set) and refuses to make a CA that never existed,
// telling the user to restore it: the move onto TLS is held for good with a message nobody
// can act on. (Set back halfway instead, the user's leaves stay frozen in place: neither
// renewed nor watched for expiry.)
func TestPeerUserSecretOffThenOperatorCA(t *testing.T) {
	ca := userCA(t, "user CA", tlsEpoch.Add(-time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
	user := withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil)
	f := newFixture(t, user, userSecret(t, "peers", ca, names, tlsEpoch, 90*24*time.Hour))
	tlsPassAt(t, f, user, tlsEpoch)

	// The move off is done: every URL on http:2380, every pod listening there alone.
	off := withTLS(newCluster(3), nil, nil)
	done := runningPodsOn(t, f, off, peermove.Listen{plainPeer}, false, 0, 1, 2)

	back := withTLS(newCluster(3), &api.TLSSource{}, nil)
	o := &observation{cluster: back, pods: done, membersKnown: true, members: membersAt(back, plainPeer, plainPeer, plainPeer)}
	o.observePeers()
	f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
	if err := f.r.ensureTLS(context.Background(), back, o); err != nil {
		t.Fatal(err)
	}
	if o.tls.Problem != nil || !o.peer.Listen.Has(peermove.Middle(true)) {
		t.Errorf("moving back onto TLS with the operator's CA after a move off a user's certificate: problem %+v, pods listen on %v; want a peer CA made and the move started",
			o.tls.Problem, o.peer.Listen)
	}
}
