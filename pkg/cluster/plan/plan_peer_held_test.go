package plan_test

import (
	"strings"
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// A move onto TLS held before it starts (holdPeerMove: spec.tls.peer names a Secret that
// cannot be used) reaches rule 8b as Step{Listen: http:2380, Dest: http:2380} with Final
// https:2380: nothing moves and nothing is rolled, so status says the move is held and why
// (the TLS problem), not that it progresses.
func TestHeldPeerMoveIsNotProgress(t *testing.T) {
	s := moveState(s0, h0, h0, h0)
	s.PeerMove.Step = peermove.Step{Listen: peermove.Listen{h0}, Dest: h0, Join: h0}
	for o, p := range s.Pods {
		p.PeerListen = peermove.Listen{h0}
		s.Pods[o] = p
	}
	s.TLS.Problem = &TLSProblem{Reason: api.ReasonTLSSecretInvalid, Message: "Secret does-not-exist (spec.tls.peer.secretName) does not exist"}
	d := Plan(s)
	if d.Progress == api.ReasonMovingPeers && strings.Contains(d.Message, "the pods are rolled") {
		t.Errorf("held move reported as progress: %s %q", d.Progress, d.Message)
	}
}
