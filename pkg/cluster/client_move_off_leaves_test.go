package cluster

import (
	"context"
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// The first review's finding 2 (one member's own leaf copied into every member's
// Secret) on the client port, not fixed there: leavingSource (spec.tls.client removed, pods
// still serving TLS) renews the members' server leaves from the operator's client CA only
// when the Secret's server-ca.crt is exactly that CA's certificate. During a client CA
// rotation (here: requested by etcd.operator.dev/rotate-ca, at its first step, the Secrets
// trusting the old and new CA together) it is a bundle, so leavingSource takes member 0's
// server leaf (issued for demo-0's names) and serving() copies it into every member's
// Secret. etcd reloads it: members 1 and 2 serve a leaf for demo-0, and whoever dials them by
// their own host over TLS (member-init, backups: clientNames) refuses it.
func TestClientMoveOffMidRotationKeepsEachMembersLeaf(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	f := newFixture(t, on)
	tlsPassAt(t, f, on, tlsEpoch)

	rotating := on.DeepCopy()
	rotating.Annotations = map[string]string{api.AnnotationRotateCA: "now"}
	pods := podsServing(on, member.ClientSecure)
	o := &observation{cluster: rotating, pods: pods, clientTarget: clientTarget(rotating, pods)}
	f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
	if err := f.r.ensureTLS(context.Background(), rotating, o); err != nil {
		t.Fatal(err)
	}
	if len(pki.Fingerprints(f.secretData(member.TLSSecretName("demo", 1))[member.KeyServerCA])) != 2 {
		t.Fatalf("the client CA rotation did not start (rotations %+v)", o.tls.Rotations)
	}

	off := withTLS(newCluster(3), &api.TLSSource{}, nil)
	o = &observation{cluster: off, pods: pods, clientTarget: clientTarget(off, pods)}
	f.r.now = func() time.Time { return tlsEpoch.Add(2 * time.Hour) }
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	checkOwnLeaves(t, f, 3, member.KeyServerCert, o)
}

// The first review's finding 2 itself, on the client port: heldIssuer is asked only
// for the peer port (applyStep: p.name == "peer"). spec.tls.client {} (the operator's client
// CA) removed, the pods still serving TLS, then set back with a user's Secret: the CAs the
// server-ca.crt key trusts change (operator CA -> user CA), a rotation starts, and until its
// step to new leaves applyStep keeps heldLeaf, member 0's own server leaf, which serving()
// copies into every member's Secret.
func TestClientReAddedWithUserSecretKeepsEachMembersLeaf(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	ca := userCA(t, "user client CA", tlsEpoch.Add(-time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc", "demo-client.ns.svc"}
	f := newFixture(t, on, userSecret(t, "clients", ca, names, tlsEpoch, 90*24*time.Hour))
	tlsPassAt(t, f, on, tlsEpoch)

	// spec.tls.client removed, every pod still serving TLS: one pass of the move off.
	pods := podsServing(on, member.ClientSecure)
	off := withTLS(newCluster(3), &api.TLSSource{}, nil)
	o := &observation{cluster: off, pods: pods, clientTarget: clientTarget(off, pods)}
	f.r.now = func() time.Time { return tlsEpoch.Add(30 * time.Minute) }
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}

	if certs, _ := pki.ParseCertificates(f.secretData(member.TLSSecretName("demo", 1))[member.KeyServerCert]); len(certs) == 0 ||
		certs[0].VerifyHostname(member.Host("demo", "ns", 1)) != nil {
		t.Fatal("precondition: after the move-off pass member 1 should still hold its own server leaf")
	}

	back := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{SecretName: "clients"})
	o = &observation{cluster: back, pods: pods, clientTarget: clientTarget(back, pods)}
	f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
	if err := f.r.ensureTLS(context.Background(), back, o); err != nil {
		t.Fatal(err)
	}
	checkOwnLeaves(t, f, 3, member.KeyServerCert, o)
}
