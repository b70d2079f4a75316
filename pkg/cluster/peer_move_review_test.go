package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// REVIEW (wt-review): a running cluster's spec.tls.peer is added (or removed) and every pod is
// lost before a pass has seen a member answer since the edit (the operator down or restarting,
// a node lost, the pods deleted together): no claim records a hop, because recordPeerMove only
// runs once etcd's member list is known. The members' data still holds their old peer URLs
// (the claims' scheme), so the pods must be made listening there, and the move start once they
// answer. Instead observePeers builds them on the spec's endpoint, and checkPeerSchemes holds
// every member back with InvalidSpec ("delete the claims if their data is not needed"): the
// cluster never comes back until the spec is reverted by hand.
func TestReviewPeerMoveEveryPodDeletedBeforeTheHopIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		peer        *api.TLSSource
		claimScheme string
	}{
		{"spec.tls.peer added", &api.TLSSource{}, "http"},
		{"spec.tls.peer removed", nil, "https"},
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
