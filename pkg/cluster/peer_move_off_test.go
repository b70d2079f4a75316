package cluster

import (
	"context"
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

// movingOff is a pass's observation of a cluster whose spec.tls.peer was just removed: every
// member still on https:2380, the pods rolled onto the first hop off TLS (https:2380 and
// http:2382), which still takes and dials TLS between peers with the leaves in the members'
// Secrets. Pods are made for the given ordinals.
func movingOff(t *testing.T, ordinals ...int) (*api.EtcdCluster, *observation) {
	t.Helper()
	off := withTLS(newCluster(3), nil, nil)
	o := &observation{cluster: off, pods: map[int]*corev1.Pod{}, membersKnown: true, members: membersAt(off, tlsPeer, tlsPeer, tlsPeer)}
	o.observePeers()
	if !o.peer.Listen.TLS() {
		t.Fatalf("hop %v takes no TLS", o.peer.Listen)
	}
	for _, ord := range ordinals {
		o.pods[ord] = member.Pod(off, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting,
			InitialCluster: []int{0, 1, 2}, PeerListen: o.peer.Listen}, testInitImage)
	}
	return off, o
}

// The operator's peer leaves are renewed at two thirds of their life while the peers move off
// TLS: a move that waits (a member down, PeerMoveStuck) past their end would leave members
// refusing each other's certificates while their URLs are still on https, and quorum lost.
// A member whose Secret is gone meanwhile gets a leaf of its own from the same CA.
func TestPeerLeavesRenewedWhileMovingOff(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, nil)
	f := newFixture(t, on)
	tlsPassAt(t, f, on, tlsEpoch)
	before := f.secretData(member.TLSSecretName("demo", 0))
	if err := f.kube.CoreV1().Secrets("ns").Delete(context.Background(), member.TLSSecretName("demo", 2), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	off, o := movingOff(t, 0, 1)
	f.r.now = func() time.Time { return tlsEpoch.Add(61 * 24 * time.Hour) }
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	after := f.secretData(member.TLSSecretName("demo", 0))
	if string(after[member.KeyPeerCert]) == string(before[member.KeyPeerCert]) {
		t.Errorf("member 0's peer leaf, in use on https:2380 during the move off TLS, not renewed at two thirds of its life (writes %v, problem %+v)",
			f.secretWrites(), o.tls.Problem)
	}
	if string(after[member.KeyPeerCA]) != string(before[member.KeyPeerCA]) {
		t.Error("member 0's trusted peer CAs changed during the move off TLS")
	}
	ca, err := pki.ParseCertificates(before[member.KeyPeerCA])
	if err != nil {
		t.Fatal(err)
	}
	for ord := range 3 {
		d := f.secretData(member.TLSSecretName("demo", ord))
		leaf, problem := f.r.certs.check(d[member.KeyPeerCert], d[member.KeyPeerKey], before[member.KeyPeerCA],
			member.MemberNames(off, ord), pki.ServerAuth|pki.ClientAuth, tlsEpoch.Add(61*24*time.Hour))
		if problem != nil || pki.SignedBy(d[member.KeyPeerCert], ca) == "" {
			t.Errorf("member %d's peer leaf: %v", ord, problem)
		} else if !leaf.NotAfter.After(tlsEpoch.Add(90 * 24 * time.Hour)) {
			t.Errorf("member %d's peer leaf ends at %s, not renewed", ord, leaf.NotAfter)
		}
	}
	if o.tls.Problem != nil || len(o.tls.Unready) != 0 {
		t.Errorf("problem %+v, unready %v", o.tls.Problem, o.tls.Unready)
	}
}

// A user's peer certificate (spec.tls.peer.secretName, removed with spec.tls.peer) cannot be
// renewed: the members keep the copy they hold, a member whose Secret is gone gets the same
// copy, and one near its end is reported, since the move off TLS must finish before it.
func TestPeerUserCertificateKeptWhileMovingOff(t *testing.T) {
	ca := userCA(t, "user CA", tlsEpoch.Add(-200*24*time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
	user := userSecret(t, "peers", ca, names, tlsEpoch.Add(-time.Hour), 90*24*time.Hour)
	on := withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil)
	f := newFixture(t, on, user)
	tlsPassAt(t, f, on, tlsEpoch)
	if err := f.kube.CoreV1().Secrets("ns").Delete(context.Background(), member.TLSSecretName("demo", 2), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	off, o := movingOff(t, 0, 1)
	f.r.now = func() time.Time { return tlsEpoch.Add(80 * 24 * time.Hour) }
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	for ord := range 3 {
		d := f.secretData(member.TLSSecretName("demo", ord))
		if string(d[member.KeyPeerCert]) != string(user.Data["tls.crt"]) || string(d[member.KeyPeerCA]) != string(ca.CertPEM) {
			t.Errorf("member %d's Secret does not hold the user's certificate and CA", ord)
		}
	}
	if !strings.Contains(o.tls.Expiring, "peer") || o.tls.Problem != nil || len(o.tls.Unready) != 0 {
		t.Errorf("expiring %q, problem %+v, unready %v; want the coming expiry said, nothing held", o.tls.Expiring, o.tls.Problem, o.tls.Unready)
	}
}

// Every pod lost while the peers move off TLS, before any pass recorded the hop (spec.tls.peer
// removed while the operator was down): the members' data holds https peer URLs, so the pods
// come back listening there, with the leaves their Secrets hold, and nobody is held back.
func TestPeerMoveOffEveryPodLostBeforeTheHopIsRecorded(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, nil)
	f := newFixture(t, on)
	tlsPassAt(t, f, on, tlsEpoch)
	off := withTLS(newCluster(3), nil, nil)
	claims := map[int]*corev1.PersistentVolumeClaim{}
	for ord := range 3 {
		claims[ord] = movedClaim(ord, "")
		claims[ord].Annotations[member.AnnotationPeerScheme] = "https"
	}
	o := &observation{cluster: off, pods: map[int]*corev1.Pod{}, claims: claims}
	o.observePeers()
	if !o.peer.Listen.Has(tlsPeer) {
		t.Errorf("pods made listening on %v; the members' URLs are on https://:2380 (the claims' scheme)", o.peer.Listen)
	}
	f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	checkPeerSchemes(off, o)
	if len(o.tls.Unready) != 0 || o.tls.Problem != nil {
		t.Errorf("this cluster's own members held back: unready %v, problem %+v", o.tls.Unready, o.tls.Problem)
	}
}

// The peers move off TLS and the claims record the hop: with the members' Secrets holding their
// peer certificates, the members start. Without any (a cluster deleted mid-move and created
// again without peer TLS: its Secrets went with the old object), they are held, and the
// cluster says to set spec.tls.peer.
func TestPeerMoveOffRecordedHop(t *testing.T) {
	for _, withSecrets := range []bool{true, false} {
		on := withTLS(newCluster(3), &api.TLSSource{}, nil)
		f := newFixture(t, on)
		if withSecrets {
			tlsPassAt(t, f, on, tlsEpoch)
		}
		off, moving := movingOff(t)
		claims := map[int]*corev1.PersistentVolumeClaim{}
		for ord := range 3 {
			claims[ord] = movedClaim(ord, moving.peer.Listen.String())
			claims[ord].Annotations[member.AnnotationPeerScheme] = "https"
		}
		o := &observation{cluster: off, pods: map[int]*corev1.Pod{}, claims: claims}
		o.observePeers()
		f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
		if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
			t.Fatal(err)
		}
		checkPeerSchemes(off, o)
		held := len(o.tls.Unready) == 3 && o.tls.Problem != nil && strings.Contains(o.tls.Problem.Message, "spec.tls.peer")
		if withSecrets && (len(o.tls.Unready) != 0 || o.tls.Problem != nil) {
			t.Errorf("with the member Secrets: unready %v, problem %+v; want every member started", o.tls.Unready, o.tls.Problem)
		}
		if !withSecrets && !held {
			t.Errorf("without member Secrets: unready %v, problem %+v; want every member held, told to set spec.tls.peer", o.tls.Unready, o.tls.Problem)
		}
	}
}

// setBackMidMoveOff runs a pass of back (spec.tls.peer set again) halfway through the first
// hop off TLS: member 0's URL on http:2382, the others' still on https:2380, every pod
// listening on both and trusting what its Secret holds.
func setBackMidMoveOff(t *testing.T, f *fixture, back *api.EtcdCluster) *observation {
	t.Helper()
	o := &observation{cluster: back, membersKnown: true, members: membersAt(back, peermove.Middle(false), tlsPeer, tlsPeer)}
	o.observePeers()
	if !o.peer.Listen.TLS() {
		t.Fatalf("hop %v takes no TLS", o.peer.Listen)
	}
	o.pods = runningPodsOn(t, f, back, o.peer.Listen, true, 0, 1, 2)
	f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
	if err := f.r.ensureTLS(context.Background(), back, o); err != nil {
		t.Fatal(err)
	}
	return o
}

// checkOwnLeaves fails for each of demo's n members whose Secret holds, under key, a leaf not
// valid for the member's own host, where its peers and member-init dial it.
func checkOwnLeaves(t *testing.T, f *fixture, n int, key string, o *observation) {
	t.Helper()
	for ord := range n {
		certs, err := pki.ParseCertificates(f.secretData(member.TLSSecretName("demo", ord))[key])
		if err != nil || len(certs) == 0 {
			t.Fatalf("member %d's %s: %v", ord, key, err)
		}
		host := member.Host("demo", "ns", ord)
		if err := certs[0].VerifyHostname(host); err != nil {
			t.Errorf("member %d's Secret holds a leaf (%s) refused when it is dialled at %s (%v; rotations %+v, problem %+v)",
				ord, key, host, err, o.tls.Rotations, o.tls.Problem)
		}
	}
}
