package cluster

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// TestPeerReAddedWithUserSecretMidMoveOff, with the operator's peer CA Secret
// (<name>-peer-ca) deleted before spec.tls.peer is set back to the user's Secret: the
// natural clean-up of someone switching to their own certificates ("the operator's CA is no
// longer used"). While the move off ran, keepPeer kept each member's own leaf (no CA to renew
// it, each valid for its own names). Once the user's Secret is named, heldIssuer finds no
// operator CA (operatorPeerCAs: none) and applyStep falls back to heldLeaf: member 0's own
// leaf is copied into every member's Secret, the bug the first review found. etcd reloads
// the key pair on new connections: members 1 and 2 serve demo-0's certificate, their peers
// refuse it when dialling demo-1 / demo-2.
func TestPeerReAddedWithUserSecretAfterPeerCADeleted(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, nil)
	ca := userCA(t, "user CA", tlsEpoch.Add(-time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
	f := newFixture(t, on, userSecret(t, "peers", ca, names, tlsEpoch, 90*24*time.Hour))
	tlsPassAt(t, f, on, tlsEpoch)

	// spec.tls.peer removed: the first pass of the move off keeps every member's leaf.
	off, o := movingOff(t, 0, 1, 2)
	f.r.now = func() time.Time { return tlsEpoch.Add(30 * time.Minute) }
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	// The operator's CA Secret deleted by the user.
	if err := f.kube.CoreV1().Secrets("ns").Delete(context.Background(), member.PeerCASecretName("demo"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	o = setBackMidMoveOff(t, f, withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil))
	checkOwnLeaves(t, f, 3, member.KeyPeerCert, o)
}
