package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

var (
	plainPeer = peermove.Final(false)
	tlsPeer   = peermove.Final(true)
	tlsMove   = peermove.Middle(true)
)

// movedClaim is member ord's claim, made with plaintext peers, recording hop (none: "").
func movedClaim(ord int, hop string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: member.ClaimName("demo", ord), Namespace: "ns", UID: "claim-uid",
		Annotations: map[string]string{member.AnnotationMemberID: member.FormatID(uint64(ord + 1)), member.AnnotationPeerScheme: "http"}}}
	if hop != "" {
		pvc.Annotations[member.AnnotationPeerMove] = hop
	}
	return pvc
}

// membersAt lists three members of demo with their peer URLs at the given endpoints.
func membersAt(c *api.EtcdCluster, at ...peermove.Endpoint) []etcdutil.Member {
	var out []etcdutil.Member
	for o, e := range at {
		out = append(out, etcdutil.Member{ID: uint64(o + 1), Name: member.Name(c.Name, o), PeerURLs: []string{e.URL(member.Host(c.Name, c.Namespace, o))}})
	}
	return out
}

// Every pod deleted at the end of the first hop onto TLS (every URL on https:2382), so no
// member answers: the pods are made listening where the claims record the hop, which holds
// the URLs, and checkPeerSchemes does not hold the claims back although they were made with
// plaintext peers and the spec now asks for TLS (the lost session's bug: the cluster stayed
// Degraded InvalidSpec). Claims made with TLS peers under a plaintext spec are still held.
func TestPeerMoveEveryPodDeleted(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	hop := peermove.NewListen(plainPeer, tlsMove).String()
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{},
		claims: map[int]*corev1.PersistentVolumeClaim{0: movedClaim(0, hop), 1: movedClaim(1, hop), 2: movedClaim(2, hop)}}
	o.observePeers()
	if !o.peer.Listen.Has(tlsMove) || !o.peer.Listen.Has(plainPeer) {
		t.Fatalf("pods made listening on %v, want the recorded hop %s", o.peer.Listen, hop)
	}
	checkPeerSchemes(c, o)
	if o.tls.Problem != nil || len(o.tls.Unready) != 0 {
		t.Errorf("claims recording the move held back: %+v, unready %v", o.tls.Problem, o.tls.Unready)
	}

	// A claim made with TLS peers under a spec without peer TLS records no move the operator
	// makes (it moves peers onto TLS only): held.
	https := movedClaim(0, "")
	https.Annotations[member.AnnotationPeerScheme] = "https"
	plain := withTLS(newCluster(3), nil, nil)
	o = &observation{cluster: plain, pods: map[int]*corev1.Pod{}, claims: map[int]*corev1.PersistentVolumeClaim{0: https}}
	o.observePeers()
	checkPeerSchemes(plain, o)
	if o.tls.Problem == nil || o.tls.Problem.Reason != api.ReasonInvalidSpec {
		t.Errorf("a TLS claim recording no move, under plaintext peers: problem %+v, want InvalidSpec", o.tls.Problem)
	}
}

// The claims record each hop before the pass acts, from etcd's member list, and the scheme
// the data has once every URL is where the spec puts them; a claim that holds no member yet
// is left alone; nothing is written when the claims say it already.
func TestRecordPeerMove(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	for _, tc := range []struct {
		name             string
		at               []peermove.Endpoint
		hop, wantHop     string
		wantScheme       string
		wantWrites       int
		wantListen       peermove.Listen
		wantRecordedFrom bool
	}{
		{name: "the move starts", at: []peermove.Endpoint{plainPeer, plainPeer, plainPeer},
			wantHop: "http:2380,https:2382", wantScheme: "http", wantWrites: 3, wantListen: peermove.Listen{plainPeer, tlsMove}},
		{name: "recorded already", at: []peermove.Endpoint{tlsMove, plainPeer, plainPeer}, hop: "http:2380,https:2382",
			wantHop: "http:2380,https:2382", wantScheme: "http", wantListen: peermove.Listen{plainPeer, tlsMove}},
		{name: "the second hop", at: []peermove.Endpoint{tlsMove, tlsMove, tlsMove}, hop: "http:2380,https:2382",
			wantHop: "https:2380,https:2382", wantScheme: "http", wantWrites: 3, wantListen: peermove.Listen{tlsPeer, tlsMove}},
		{name: "done", at: []peermove.Endpoint{tlsPeer, tlsPeer, tlsPeer}, hop: "https:2380,https:2382",
			wantScheme: "https", wantWrites: 6, wantListen: peermove.Listen{tlsPeer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := map[int]*corev1.PersistentVolumeClaim{}
			var objs []runtime.Object
			for o := range 3 {
				claims[o] = movedClaim(o, tc.hop)
				objs = append(objs, claims[o])
			}
			unmarked := movedClaim(3, "")
			delete(unmarked.Annotations, member.AnnotationMemberID)
			claims[3] = unmarked
			f := newFixture(t, append(objs, c, unmarked)...)
			f.kube.ClearActions()
			o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, claims: claims, membersKnown: true, members: membersAt(c, tc.at...)}
			o.observePeers()
			if !o.peer.Listen.Equal(tc.wantListen) {
				t.Errorf("listen %v, want %v", o.peer.Listen, tc.wantListen)
			}
			if err := f.r.recordPeerMove(context.Background(), c, o); err != nil {
				t.Fatal(err)
			}
			if n := len(f.actions("patch", "persistentvolumeclaims")); n != tc.wantWrites {
				t.Errorf("%d claim writes, want %d", n, tc.wantWrites)
			}
			for ord := range 3 {
				a := o.claims[ord].Annotations
				if a[member.AnnotationPeerMove] != tc.wantHop || member.ClaimPeerScheme(o.claims[ord]) != tc.wantScheme {
					t.Errorf("claim %d records hop %q scheme %q, want %q %q", ord, a[member.AnnotationPeerMove], member.ClaimPeerScheme(o.claims[ord]), tc.wantHop, tc.wantScheme)
				}
			}
			if _, ok := o.claims[3].Annotations[member.AnnotationPeerMove]; ok {
				t.Error("a claim that holds no member records the move")
			}
			if tc.wantHop != "" && !o.peerRecorded() {
				t.Error("the hop recorded on every member claim is not seen as recorded")
			}
		})
	}
}

// A member joining during a move is made, and added, where members already are: its pod's
// initial cluster names every member as etcd lists it, and itself at Step.Join.
func TestPeerMoveJoiningMember(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, membersKnown: true, members: membersAt(c, tlsMove, plainPeer)}
	o.observePeers()
	urls := o.peerURLsFor([]int{0, 1, 2})
	want := map[int]string{
		0: tlsMove.URL(member.Host("demo", "ns", 0)),
		1: plainPeer.URL(member.Host("demo", "ns", 1)),
		2: plainPeer.URL(member.Host("demo", "ns", 2)),
	}
	for o2, u := range want {
		if urls[o2] != u {
			t.Errorf("initial cluster names member %d at %s, want %s", o2, urls[o2], u)
		}
	}
	pod := member.Pod(c, member.Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2},
		PeerURLs: urls, PeerListen: o.peer.Listen}, testInitImage)
	o.pods[2] = pod
	if got := o.joiningPeerURL(2); got != want[2] {
		t.Errorf("added at %s, want %s (where its pod says)", got, want[2])
	}
	if !member.UpToDate(c, pod, member.Target{Version: c.Spec.Version, Peer: o.peer.Listen}, testInitImage) {
		t.Error("the joining member's pod, made now, is out of date")
	}
}

// A peer CA rotation asks each member pod on the port where its etcd takes TLS from its peers:
// the move port while the peers move onto TLS, the peer port otherwise; a pod that takes none
// yet (plaintext, not rolled onto the move) is not asked. Asking https on the peer port of a
// pod listening there in plaintext never answers, and a move waiting for the rotation would
// wait for ever (the lost session's deadlock).
func TestRotationProbesThePeerTLSListener(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	listens := map[int]peermove.Listen{
		0: {plainPeer},
		1: peermove.NewListen(plainPeer, tlsMove),
		2: {tlsPeer},
	}
	f := newFixture(t, c)
	var probed []string
	f.r.deps.ProbeTLS = func(_ context.Context, baseURL string, _ tls.Certificate, _ *x509.CertPool, _ string) ([]*x509.Certificate, error) {
		probed = append(probed, baseURL)
		return nil, errors.New("not a member")
	}
	pass := &tlsPass{r: f.r, c: c}
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}}
	for ord, l := range listens {
		p := member.Pod(c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, PeerListen: l}, testInitImage)
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.0.0.%d", ord)
		o.pods[ord] = p
	}
	port := rotationPort{name: "peer", src: &portSource{}}
	pods := pass.rotationPods(o, port)
	if pods[0].Uses || !pods[1].Uses || !pods[2].Uses {
		t.Errorf("pods asked: %v %v %v, want the two that take TLS", pods[0].Uses, pods[1].Uses, pods[2].Uses)
	}
	for ord, rp := range pods {
		if asked(rp) {
			pass.probePod(context.Background(), &rp, o.pods[ord], ord, port, trustSet{}, []tls.Certificate{{}})
		}
	}
	slices.Sort(probed)
	if want := []string{"https://10.0.0.1:2382", "https://10.0.0.2:2380"}; !slices.Equal(probed, want) {
		t.Errorf("probed %v, want %v", probed, want)
	}
}

// A move onto peer TLS from a Secret that does not exist: the pass says which Secret and why,
// and the move is held before it starts: pods are built listening in plaintext as the members
// do, none is rolled, and a member whose pod is lost meanwhile comes back (its Secret is not
// waited for). Once a URL has moved, nothing is held (the members' Secrets hold what they
// started with).
func TestPeerMoveOntoMissingSecret(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{SecretName: "does-not-exist"}, nil)
	for _, tc := range []struct {
		name     string
		at       []peermove.Endpoint
		held     bool
		unreadys int
	}{
		{"not started", []peermove.Endpoint{plainPeer, plainPeer, plainPeer}, true, 0},
		{"a URL moved already", []peermove.Endpoint{tlsMove, plainPeer, plainPeer}, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c)
			f.kube.ClearActions()
			o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, membersKnown: true, members: membersAt(c, tc.at...)}
			o.observePeers()
			for ord := range 3 {
				o.pods[ord] = member.Pod(c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting,
					InitialCluster: []int{0, 1, 2}, PeerListen: peermove.Listen{plainPeer}}, testInitImage)
			}
			if err := f.r.ensureTLS(context.Background(), c, o); err != nil {
				t.Fatal(err)
			}
			if p := o.tls.Problem; p == nil || p.Reason != api.ReasonTLSSecretInvalid || !strings.Contains(p.Message, "does-not-exist") {
				t.Errorf("problem %+v, want TLSSecretInvalid naming the Secret", p)
			}
			if held := o.peer.Listen.Equal(peermove.Listen{plainPeer}); held != tc.held {
				t.Errorf("pods built listening on %v; held %v, want %v", o.peer.Listen, held, tc.held)
			}
			if len(o.tls.Unready) != tc.unreadys {
				t.Errorf("unready %v, want %d members", o.tls.Unready, tc.unreadys)
			}
		})
	}
}

// The planner sees what each pod listens on for its peers, read back from the pod: rule 8b
// moves a URL only where every pod listens (a view without it held the move for ever on the
// node).
func TestPeerMoveStateReadsThePods(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, claims: map[int]*corev1.PersistentVolumeClaim{},
		membersKnown: true, members: membersAt(c, plainPeer, plainPeer, plainPeer), initImage: testInitImage}
	o.observePeers()
	for ord := range 3 {
		o.pods[ord] = member.Pod(c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting,
			InitialCluster: []int{0, 1, 2}, PeerListen: o.peer.Listen}, testInitImage)
	}
	s := o.state(time.Now())
	for ord, p := range s.Pods {
		if !p.PeerListen.Equal(o.peer.Listen) || p.Outdated {
			t.Errorf("pod %d seen listening on %v (outdated %v), want %v, up to date", ord, p.PeerListen, p.Outdated, o.peer.Listen)
		}
	}
	if !s.PeerMove.Moving() || !s.PeerMove.Recorded || s.PeerMove.Step.Dest != tlsMove {
		t.Errorf("move view %+v, want moving to %v", s.PeerMove, tlsMove)
	}
}
