package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// Rotations on a cluster that scaled down and up again. Scaling down leaves the Secret of the
// member that went, as it was: what it trusts, its leaves and its rotation records are those
// of the day it went. Scaling up again must not take them for what a member runs on.

// untilDone runs passes, with the rollout's restarts and the kubelet's refreshes between them,
// until no rotation is under way, checking the world after each.
func (s *rotationSim) untilDone(what string) {
	s.t.Helper()
	for step := 0; ; step++ {
		ok := s.pass()
		s.check(fmt.Sprintf("%s, step %d, after the pass", what, step))
		if ok && s.done() {
			return
		}
		if step > 200 {
			s.t.Fatalf("%s: the rotation did not end; last steps %+v", what, s.last.tls.Rotations)
		}
		if ord := s.outdated(); ok && ord >= 0 {
			s.restart(ord)
			s.check(fmt.Sprintf("%s, step %d, after member %d restarted", what, step, ord))
		}
		s.refresh(step % len(s.members))
		s.check(fmt.Sprintf("%s, step %d, after member %d's volume refreshed", what, step, step%len(s.members)))
	}
}

// scaleTo sets the cluster's size; the members above it go, with their pods.
func (s *rotationSim) scaleTo(size int) {
	s.c.Spec.Size = int32(size)
	for ord := range s.members {
		if ord >= size {
			delete(s.members, ord)
		}
	}
}

// A member scaled away before a rotation of the operator's CA left its Secret trusting the old
// CA. Scaling up again once the rotation is done gives the new member the new CA alone: the
// other members' Secrets do not trust the dropped CA again, and their pods are not rolled.
func TestTLSRotationThenScaleUp(t *testing.T) {
	s := newRotationSim(t, withTLS(newCluster(4), &api.TLSSource{}, nil))
	s.start()
	s.scaleTo(3)
	s.untilDone("scaled down")
	dropped := s.f.secretData("demo-peer-ca")["tls.crt"]
	s.c.Annotations = map[string]string{api.AnnotationRotateCA: "2026-11-25"}
	s.untilDone("rotating")
	current := s.f.secretData("demo-peer-ca")["tls.crt"]
	if slices.Equal(pki.Fingerprints(current), pki.Fingerprints(dropped)) {
		t.Fatal("the CA did not rotate")
	}
	s.scaleTo(4)
	s.pass()
	for ord := range 4 {
		if got := pki.Fingerprints(s.f.secretData(member.TLSSecretName("demo", ord))[member.KeyPeerCA]); !slices.Equal(got, pki.Fingerprints(current)) {
			t.Errorf("scaled up: member %d's Secret trusts %v, want the current CA %v alone", ord, got, pki.Fingerprints(current))
		}
	}
	for _, r := range s.last.tls.Rotations {
		if r.Phase != "" {
			t.Errorf("scaled up: the %s port rotates again (%s: %s)", r.Port, r.Phase, r.Waiting)
		}
	}
	if ord := s.outdated(); ord >= 0 {
		t.Errorf("scaled up: member %d is to be restarted", ord)
	}
}

// A user's peer CA went from a to b with four members, the fourth went, and the CA went back
// to a. The fourth's Secret still records that its leaves are b's. Scaled up again as the
// CA moves to b once more, that record is not taken for this rotation's: the leaves stay a's
// until every member trusts b.
func TestTLSRotationIgnoresAnOldRecord(t *testing.T) {
	a, b := userCA(t, "CA a", tlsEpoch.Add(-time.Hour)), userCA(t, "CA b", tlsEpoch.Add(-time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc", "demo-3.ns.svc"}
	s := newRotationSim(t, withTLS(newCluster(4), &api.TLSSource{SecretName: "peers"}, nil), userSecret(t, "peers", a, names, tlsEpoch, 90*24*time.Hour))
	moveTo := func(ca pki.KeyPair) {
		// A new rotation: a leaf may go back to a CA it left in an earlier one.
		s.issuers = map[string][]string{}
		if _, err := s.f.kube.CoreV1().Secrets("ns").Update(context.Background(), userSecret(t, "peers", ca, names, s.now, 90*24*time.Hour),
			metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.start()
	moveTo(b)
	s.untilDone("a to b")
	s.scaleTo(3)
	moveTo(a)
	s.untilDone("b to a, scaled down")
	s.scaleTo(4)
	moveTo(b)
	if !s.pass() {
		t.Fatal("the pass failed")
	}
	s.members[3] = &simMember{}
	s.restart(3)
	s.check("scaled up as the CA moves to b")
	s.untilDone("a to b again, scaled up")
}
