package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// Claims of mixed schemes, no hop recorded, no member answering, the spec asks for peer TLS
// (retained claims of two lifetimes: https claims 3 and 4 of an earlier TLS "demo", http
// claims 0-2 of the current plaintext one, spec.tls.peer added while the operator was down):
// the pods are made on https:2380 (not every claim is plaintext), so the http claims, whose
// data says http:2380, are held with InvalidSpec rather than started where no peer dials.
func TestPeerSchemesMixedNoHop(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	claims := map[int]*corev1.PersistentVolumeClaim{}
	for ord := range 5 {
		claims[ord] = movedClaim(ord, "")
	}
	claims[3].Annotations[member.AnnotationPeerScheme] = "https"
	claims[4].Annotations[member.AnnotationPeerScheme] = "https"
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, claims: claims}
	o.observePeers()
	checkPeerSchemes(c, o)
	t.Logf("listen %v, unready %v, problem %+v", o.peer.Listen, o.tls.Unready, o.tls.Problem)
	if o.peer.Listen.TLS() && !o.peer.Listen.Has(plainPeer) && len(o.tls.Unready) == 0 && o.tls.Problem == nil {
		t.Errorf("http claims 0-2 started on %v (their data's peer URLs are http:2380), nothing held", o.peer.Listen)
	}
}

// A cluster deleted (whenDeleted Retain) while its peers moved onto TLS, created again
// without peer TLS (spec.tls: {}, or no spec.tls where the admission policy is not served):
// the claims record a hop onto TLS, whose pods would listen over TLS and mount member Secrets
// that went with the deleted object (no member Secret holds peer certificates, and without
// peer TLS in the spec none is issued): held with InvalidSpec, which says to set
// spec.tls.peer.
func TestPeerSchemesRecreatedPlaintextOverMidMoveClaims(t *testing.T) {
	plain := withTLS(newCluster(3), nil, nil)
	hop := peermove.NewListen(plainPeer, tlsMove).String()
	claims := map[int]*corev1.PersistentVolumeClaim{}
	for ord := range 3 {
		claims[ord] = movedClaim(ord, hop)
	}
	o := &observation{cluster: plain, pods: map[int]*corev1.Pod{}, claims: claims}
	o.observePeers()
	checkPeerSchemes(plain, o)
	p := member.Pod(plain, member.Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateExisting,
		InitialCluster: []int{0, 1, 2}, PeerListen: o.peer.Listen, Version: member.NormalizeVersion(plain.Spec.Version)}, testInitImage)
	mounts := false
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == member.TLSSecretName(plain.Name, 0) {
			mounts = true
		}
	}
	t.Logf("peer TLS in spec %v, listen %v, unready %v, problem %+v, pod mounts %s: %v",
		member.PeerTLS(plain), o.peer.Listen, o.tls.Unready, o.tls.Problem, member.TLSSecretName(plain.Name, 0), mounts)
	if !member.PeerTLS(plain) && o.peer.Listen.TLS() && mounts && o.tls.Problem == nil && len(o.tls.Unready) == 0 {
		t.Errorf("pods made on %v mounting %s under a spec without peer TLS (ensureTLS writes no member Secret then); nothing held",
			o.peer.Listen, member.TLSSecretName(plain.Name, 0))
	}
}
