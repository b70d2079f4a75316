package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// A running cluster's spec.tls.peer is added and every pod is lost before a pass has seen a
// member answer since (the operator down or restarting, a node lost, the pods deleted
// together): no claim records a hop, since recordPeerMove runs only once etcd's member list
// is known. The members' data still holds plaintext peer URLs (the claims' scheme), so the
// pods are made listening there, and no member is held back; the move starts once they answer.
// (Before: pods on the spec's endpoint, every member held back with InvalidSpec, for ever.)
func TestPeerMoveEveryPodDeletedBeforeTheHopIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		peer        *api.TLSSource
		claimScheme string
	}{
		{"spec.tls.peer added", &api.TLSSource{}, "http"},
		{"spec.tls.peer from a Secret added", &api.TLSSource{SecretName: "peer-tls"}, "http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := withTLS(newCluster(3), tc.peer, nil)
			claims := map[int]*corev1.PersistentVolumeClaim{}
			for ord := range 3 {
				claims[ord] = movedClaim(ord, "")
				claims[ord].Annotations[member.AnnotationPeerScheme] = tc.claimScheme
			}
			o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, claims: claims}
			o.observePeers()
			checkPeerSchemes(c, o)
			if len(o.tls.Unready) != 0 || o.tls.Problem != nil {
				t.Errorf("this cluster's own members held back: unready %v, problem %+v", o.tls.Unready, o.tls.Problem)
			}
			if o.peer.Listen[0].Scheme() != tc.claimScheme && !(len(o.peer.Listen) > 1 && o.peer.Listen[1].Scheme() == tc.claimScheme) {
				t.Errorf("pods made listening on %v; the members' URLs are on %s://:2380 (the claims' scheme)", o.peer.Listen, tc.claimScheme)
			}
		})
	}
}

// The cluster's own NetworkPolicy (spec.networkPolicy) does not admit the members on the move
// port yet: its update was refused or failed (ensureNetworkPolicy only logs that), or the
// cache has not seen it. No URL moves onto 2382 then: wherever the network plugin enforces
// policies, no peer would reach a member there, and the last move would cut off quorum.
func TestPeerMoveWaitsForTheNetworkPolicy(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	c.Spec.NetworkPolicy = &api.NetworkPolicySpec{}
	old := member.NetworkPolicy(c, member.OperatorPeer("etcd-operator-system"))
	// The policy as the operator wrote it before the move port existed.
	ports := old.Spec.Ingress[0].Ports[:0]
	for _, p := range old.Spec.Ingress[0].Ports {
		if p.Port.IntValue() != int(member.MovePort) {
			ports = append(ports, p)
		}
	}
	old.Spec.Ingress[0].Ports = ports
	objs := []runtime.Object{c, old}
	for ord := range 3 {
		objs = append(objs, member.MemberService(c, ord))
	}
	f := newFixture(t, objs...)
	f.kube.PrependReactor("*", "networkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook denied the request")
	})
	f.r.ensureNetworkPolicy(context.Background(), c) // fails: logged only

	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, claims: map[int]*corev1.PersistentVolumeClaim{},
		membersKnown: true, members: membersAt(c, plainPeer, plainPeer, plainPeer), initImage: testInitImage,
		statuses: map[int]etcdutil.Status{}, leader: 1}
	o.observePeers()
	v := member.NormalizeVersion(c.Spec.Version)
	for ord := range 3 {
		p := member.Pod(c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting,
			InitialCluster: []int{0, 1, 2}, PeerListen: o.peer.Listen, Version: v}, testInitImage)
		p.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Minute))
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.0.0.%d", ord)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		o.pods[ord] = p
		o.statuses[ord] = etcdutil.Status{ID: uint64(ord + 1), Leader: 1, RaftIndex: 1000, RaftAppliedIndex: 1000, Version: v}
	}
	var err error
	if o.peerUnforwarded, err = f.r.unforwarded(c, o); err != nil {
		t.Fatal(err)
	}
	d := plan.Plan(o.state(time.Now()))
	if d.Action != nil && d.Action.Kind == plan.ActionMovePeerURL && strings.Contains(d.Action.PeerURL, ":2382") {
		t.Errorf("%s to %s while the cluster's NetworkPolicy admits the members on %v only (%s)",
			d.Action.Kind, d.Action.PeerURL, portNumbers(old.Spec.Ingress[0].Ports), d.Message)
	} else {
		t.Logf("decision: %+v %s", d.Action, d.Message)
	}
}

func portNumbers(ps []networkingv1.NetworkPolicyPort) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.Port.IntValue())
	}
	return out
}

// The operator killed halfway through recording the first hop (claim 0 written, 1 and 2 not:
// recordPeerMove writes in ordinal order), then every pod lost: pods are made on claim 0's hop
// (it holds http:2380), and members 1 and 2 are not held back (plaintext claims, no hop, the
// spec asks for TLS), so all three start and the move goes on.
func TestPeerMoveKilledWhileRecordingThenEveryPodDeleted(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	hop := peermove.NewListen(plainPeer, tlsMove).String()
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{},
		claims: map[int]*corev1.PersistentVolumeClaim{0: movedClaim(0, hop), 1: movedClaim(1, ""), 2: movedClaim(2, "")}}
	o.observePeers()
	checkPeerSchemes(c, o)
	if len(o.tls.Unready) != 0 || o.tls.Problem != nil {
		t.Errorf("members held back: unready %v, problem %+v", o.tls.Unready, o.tls.Problem)
	}
}
