package plan

import (
	"fmt"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// Rule 8b of the planner (see plan.go): move the members' peer URLs on or off TLS, one member
// per pass, with etcd's member update (package peermove says where each hop goes). The pods
// are rolled onto each hop's listeners by rule 8 first: the pass observes where the URLs are
// and builds pods listening there and where they go (PeerMoveView.Step.Listen), so a URL is
// moved only where every member already listens, and never away from where its own pod does.

// ActionMovePeerURL sets member MemberID's peer URL to PeerURL (etcd's member update): the
// other members dial it there from then on. Its etcd restarts on nothing.
const ActionMovePeerURL ActionKind = "MovePeerURL"

// PeerMoveView is where a move of the peers stands, as the pass observed it.
type PeerMoveView struct {
	// Final is where spec.tls puts the peer URLs.
	Final peermove.Endpoint
	// Step is where the URLs go next from where etcd's member list says they are (from the
	// claims' record when no member answered).
	Step peermove.Step
	// Recorded: every claim of a member records the hop Step.Listen (AnnotationPeerMove), so
	// that pods made while no member answers listen where the URLs may be. Always true
	// without claims.
	Recorded bool
	// Unforwarded are the ordinals of the members whose own Service does not forward the move
	// port (yet): a URL moved there would cut the member off from its peers.
	Unforwarded []int
}

// Moving reports whether the peers are not yet where the spec puts them: a URL elsewhere, or a
// pod still listening elsewhere too. A view that says nothing (no Listen) is no move.
func (v PeerMoveView) Moving() bool { return len(v.Step.Listen) > 0 && !v.Step.Done(v.Final) }

// planPeerMove is rule 8b, once no pod is left to roll.
func planPeerMove(s State) Decision {
	pm := s.PeerMove
	if !pm.Moving() {
		return Decision{}
	}
	var next *MemberView
	moved := 0
	for _, m := range SortedMembers(s.Members) {
		switch {
		case m.PeerURL == "" || peermove.Moved(m.PeerURL, pm.Step.Dest) == m.PeerURL:
			moved++
		case next == nil:
			next = &m
		}
	}
	if next == nil && s.TLS.Problem != nil {
		// The pass holds the move before it starts (pkg/cluster, holdPeerMove): Degraded says
		// why.
		return Decision{Progress: api.ReasonMovingPeers, Message: fmt.Sprintf(
			"the move of the peers to %s waits for their certificates: %s", pm.Final, s.TLS.Problem.Message)}
	}
	if next == nil {
		// Every URL is where this hop goes; the pods are rolled onto the next hop's listeners
		// (rule 8) once the pass sees it.
		return Decision{Progress: api.ReasonMovingPeers, Message: fmt.Sprintf(
			"every peer URL is at %s; the pods are rolled to listen on %s", pm.Step.Dest, pm.Step.Listen)}
	}
	if why := peerMoveWait(s, pm.Step.Dest); why != "" {
		return peerMoveWaiting(s, why)
	}
	if phase := peerRotating(s); phase != "" {
		return Decision{Progress: api.ReasonMovingPeers, Message: fmt.Sprintf(
			"the peers move to %s and wait for the peer CA's rotation (%s)", pm.Step.Dest, phase)}
	}
	d := step(s, Action{Kind: ActionMovePeerURL, Ordinal: next.Ordinal, MemberID: next.ID,
		PeerURL: peermove.Moved(next.PeerURL, pm.Step.Dest)}, api.ReasonMovingPeers, "moving the peer URL of member %s", next.Ordinal)
	d.Message += fmt.Sprintf(" from %s to %s (%d of %d members at %s)", next.PeerURL, d.Action.PeerURL, moved, len(s.Members), pm.Step.Dest)
	return d
}

// peerMoveWait says why no URL may move to dest now; empty when one may. Every member (as
// etcd lists them: a member missing from spec.size does not hold the move) is in place,
// voting, healthy and caught up with the leader, and its pod built from the current
// spec (so it listens on dest and on where its URL is); no pod is made or gone that is not a
// member's; the claims record the hop; and every member's Service forwards the move port. A
// rotation of the peer CA is waited for apart (peerRotating).
func peerMoveWait(s State, dest peermove.Endpoint) string {
	leader, ok := leaderMember(s.Members)
	if !ok {
		return "the cluster has no leader"
	}
	for _, m := range SortedMembers(s.Members) {
		p, ok := s.Pods[m.Ordinal]
		name := naming.Name(s.Name, m.Ordinal)
		switch {
		case !ok || p.Terminating:
			return fmt.Sprintf("member %s: %s", name, PodCondition(s.Pods, m.Ordinal))
		case p.Outdated || !p.PeerListen.Has(dest):
			return fmt.Sprintf("the pod of member %s does not listen on %s yet", name, dest)
		}
		if why := notCaughtUp(s, m, leader); why != "" {
			return fmt.Sprintf("member %s: %s", name, why)
		}
	}
	for _, o := range SortedOrdinals(s.Pods) {
		if !isMember(s, o) {
			return fmt.Sprintf("pod %s holds no member yet", naming.Name(s.Name, o))
		}
	}
	switch {
	case !s.PeerMove.Recorded:
		return "the claims do not record the move's step yet"
	case dest.Port == peermove.MovePort && (len(s.PeerMove.Unforwarded) > 0 || len(s.RefusedServices) > 0):
		return fmt.Sprintf("the member Services and the cluster's NetworkPolicy do not all let port %d through (members %v; Services refused %v)",
			peermove.MovePort, s.PeerMove.Unforwarded, s.RefusedServices)
	case s.DowngradeTarget != "":
		return "etcd's downgrade is enabled"
	}
	return ""
}

// peerRotating says which step a rotation of the peer CA is at; empty when none runs. A URL
// waits for it (its probes and restarts read the members' listeners), and the wait is the
// rotation's to report when it lasts (CARotationStuck), not the move's.
func peerRotating(s State) api.CARotationPhase {
	for _, r := range s.TLS.Rotations {
		if r.Port == "peer" && r.Phase != "" {
			return r.Phase
		}
	}
	return ""
}

func isMember(s State, o int) bool {
	for _, m := range s.Members {
		if m.Ordinal == o {
			return true
		}
	}
	return false
}

// peerMoveWaiting reports a URL step that waits: Progressing, and Degraded (PeerMoveStuck)
// once no pod has been made or restarted for longer than the rollout's bound: the members had
// the time to come back, and something else holds the move.
func peerMoveWaiting(s State, why string) Decision {
	msg := "the peers move to " + s.PeerMove.Step.Dest.String() + " and wait: " + why
	var last time.Time
	for _, p := range s.Pods {
		if t := p.rolledAt(); t.After(last) {
			last = t
		}
	}
	if bound := s.bounds().Comeback; !last.IsZero() && s.Now.Sub(last) > bound {
		return Decision{Blocked: api.ReasonPeerMoveStuck, Message: fmt.Sprintf("%s, for more than %s", msg, bound)}
	}
	return Decision{Progress: api.ReasonMovingPeers, Message: msg}
}
