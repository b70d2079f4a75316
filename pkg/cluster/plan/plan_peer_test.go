package plan_test

import (
	"strings"
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

var (
	h0 = peermove.Final(false)
	s0 = peermove.Final(true)
	h2 = peermove.Middle(false)
	s2 = peermove.Middle(true)
)

// peerURL is member o's peer URL on endpoint e.
func peerURL(o int, e peermove.Endpoint) string { return e.URL("c-" + string(rune('0'+o)) + ".ns.svc") }

// moveState is a healthy three-member cluster on claims whose members' URLs are at the given
// endpoints, moving to final, every pod listening as the pass builds them (up to date).
func moveState(final peermove.Endpoint, at ...peermove.Endpoint) State {
	ms := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	step := peermove.Next(at, final)
	pods := map[int]PodView{}
	st := map[int]etcdfacts.Status{}
	for i := range ms {
		ms[i].PeerURL = peerURL(i, at[i])
		p := plantest.Rolled(i, "3.6.16", false, 30*time.Second)
		p.PeerListen = step.Listen
		pods[i] = p
		st[i] = plantest.Reporting(i, "3.6.16", 1000)
	}
	return State{Name: "c", Size: 3, Bootstrapped: true, MembersKnown: true, Members: ms, Pods: pods, Statuses: st,
		Persistent: true, TargetVersion: "3.6.16", Version: "3.6.16", Now: plantest.PassAt,
		Claims:   plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2)),
		PeerMove: PeerMoveView{Final: final, Step: step, Recorded: true}}
}

func TestPlanPeerMove(t *testing.T) {
	with := func(s State, f func(*State)) State { f(&s); return s }
	for _, tc := range []struct {
		name     string
		s        State
		want     *Action
		progress api.ConditionReason
		blocked  api.ConditionReason
		says     string
	}{
		{name: "no move: nothing", s: moveState(h0, h0, h0, h0)},
		{name: "onto TLS: the first URL moves to the move port", s: moveState(s0, h0, h0, h0),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 0, MemberID: 100, PeerURL: peerURL(0, s2)}, progress: api.ReasonMovingPeers},
		{name: "onto TLS: the next one", s: moveState(s0, s2, h0, h0),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 1, MemberID: 101, PeerURL: peerURL(1, s2)}, progress: api.ReasonMovingPeers},
		{name: "onto TLS, second hop", s: moveState(s0, s2, s2, s2),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 0, MemberID: 100, PeerURL: peerURL(0, s0)}, progress: api.ReasonMovingPeers},
		{name: "onto TLS, second hop under way", s: moveState(s0, s0, s0, s2),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 2, MemberID: 102, PeerURL: peerURL(2, s0)}, progress: api.ReasonMovingPeers},
		{name: "off TLS: through http on the move port", s: moveState(h0, s0, s0, s0),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 0, MemberID: 100, PeerURL: peerURL(0, h2)}, progress: api.ReasonMovingPeers},
		{name: "set back halfway: the moved URLs come back", s: moveState(h0, s2, h0, h0),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 0, MemberID: 100, PeerURL: peerURL(0, h0)}, progress: api.ReasonMovingPeers},
		{name: "set back in the second hop", s: moveState(s0, h0, h2, h2),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 1, MemberID: 101, PeerURL: peerURL(1, h0)}, progress: api.ReasonMovingPeers},
		{name: "every URL moved, pods still on the hop's listeners: the rollout's", s: with(moveState(s0, s0, s0, s0), func(s *State) {
			for o, p := range s.Pods {
				p.PeerListen = peermove.NewListen(s0, s2)
				s.Pods[o] = p
			}
			s.PeerMove.Step.Listen = peermove.NewListen(s0)
		})},
		{name: "a pod not rolled onto the hop yet", s: with(moveState(s0, h0, h0, h0), func(s *State) {
			p := s.Pods[2]
			p.PeerListen = peermove.NewListen(h0)
			s.Pods[2] = p
		}), progress: api.ReasonMovingPeers, says: "does not listen on https:2382"},
		{name: "a member behind", s: with(moveState(s0, h0, h0, h0), func(s *State) {
			st := s.Statuses[1]
			st.RaftAppliedIndex = 10
			s.Statuses[1] = st
		}), progress: api.ReasonMovingPeers, says: "applied raft index 10"},
		{name: "a member down", s: with(moveState(s0, h0, h0, h0), func(s *State) { s.Members[2] = plantest.Sick(s.Members[2]) }),
			progress: api.ReasonMovingPeers, says: "c-2"},
		{name: "claims not recorded", s: with(moveState(s0, h0, h0, h0), func(s *State) { s.PeerMove.Recorded = false }),
			progress: api.ReasonMovingPeers, says: "claims"},
		{name: "a Service does not forward the move port", s: with(moveState(s0, h0, h0, h0), func(s *State) { s.PeerMove.Unforwarded = []int{1} }),
			progress: api.ReasonMovingPeers, says: "2382"},
		{name: "a Service refused", s: with(moveState(s0, h0, h0, h0), func(s *State) { s.RefusedServices = []string{"service c-1: quota"} }),
			progress: api.ReasonMovingPeers, says: "quota"},
		{name: "a refused Service does not hold the second hop (port 2380)", s: with(moveState(s0, s2, s2, s2), func(s *State) { s.RefusedServices = []string{"service c-1: quota"} }),
			want: &Action{Kind: ActionMovePeerURL, Ordinal: 0, MemberID: 100, PeerURL: peerURL(0, s0)}, progress: api.ReasonMovingPeers},
		{name: "the peer CA rotates", s: with(moveState(s0, h0, h0, h0), func(s *State) {
			s.TLS.Rotations = []PortRotation{{Port: "peer", RotationStep: RotationStep{Phase: api.CARotationTrustingBoth}}}
		}), progress: api.ReasonMovingPeers, says: "peer CA's rotation (TrustingBoth)"},
		{name: "the peer CA rotating past the move's bound: the rotation's to report", s: with(moveState(s0, h0, h0, h0), func(s *State) {
			s.TLS.Rotations = []PortRotation{{Port: "peer", RotationStep: RotationStep{Phase: api.CARotationReissuing}}}
			for o, p := range s.Pods {
				p.Created = plantest.PassAt.Add(-DefaultComebackBound - time.Second)
				s.Pods[o] = p
			}
		}), progress: api.ReasonMovingPeers, says: "peer CA's rotation (Reissuing)"},
		{name: "the client CA rotating holds nothing", s: with(moveState(s0, h0, h0, h0), func(s *State) {
			s.TLS.Rotations = []PortRotation{{Port: "client", RotationStep: RotationStep{Phase: api.CARotationTrustingBoth}}}
		}), want: &Action{Kind: ActionMovePeerURL, Ordinal: 0, MemberID: 100, PeerURL: peerURL(0, s2)}, progress: api.ReasonMovingPeers},
		{name: "waiting past the bound: stuck", s: with(moveState(s0, h0, h0, h0), func(s *State) {
			s.Members[2] = plantest.Sick(s.Members[2])
			for o, p := range s.Pods {
				p.Created = plantest.PassAt.Add(-DefaultComebackBound - time.Second)
				s.Pods[o] = p
			}
		}), blocked: api.ReasonPeerMoveStuck, says: "c-2"},
		{name: "held for a Secret that cannot be used", s: with(moveState(s0, h0, h0, h0), func(s *State) {
			s.PeerMove.Step = peermove.Step{Listen: peermove.Listen{h0}, Dest: h0, Join: h0}
			for o, p := range s.Pods {
				p.PeerListen = peermove.Listen{h0}
				s.Pods[o] = p
			}
			s.TLS.Problem = &TLSProblem{Reason: api.ReasonTLSSecretInvalid, Message: "Secret p does not exist"}
		}), progress: api.ReasonMovingPeers, says: "waits for their certificates: Secret p does not exist"},
		{name: "URLs where no move leads", s: moveState(s0, h0, s0, s0), blocked: api.ReasonInvalidSpec, says: "no move leads through"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Plan(tc.s)
			if !samePeerAction(d.Action, tc.want) {
				t.Fatalf("action %+v, want %+v (%s)", d.Action, tc.want, d.Message)
			}
			if d.Progress != tc.progress || d.Blocked != tc.blocked {
				t.Errorf("progress %q blocked %q, want %q %q (%s)", d.Progress, d.Blocked, tc.progress, tc.blocked, d.Message)
			}
			if !strings.Contains(d.Message, tc.says) {
				t.Errorf("message %q, want it to say %q", d.Message, tc.says)
			}
		})
	}
}

func samePeerAction(a, b *Action) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.Ordinal == b.Ordinal && a.MemberID == b.MemberID && a.PeerURL == b.PeerURL
}
