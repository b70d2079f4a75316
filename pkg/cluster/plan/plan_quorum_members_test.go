package plan_test

import (
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

func removed(c ClaimView) ClaimView { c.Removed = true; return c }

// A quorum loss assessed while status.members is behind etcd's membership: the status write
// of the pass that added, promoted or replaced a member was dropped, or never made.
func TestPlanQuorumLossStaleStatus(t *testing.T) {
	highest := func(s State) State {
		s.Recovery.RecoverFrom = api.RecoverFromHighest
		return s
	}
	// Size 3: status lists c-0 and c-1 (it missed c-2, member 7, added after c-0's old
	// member was removed); c-0's claim is being deleted, c-1 answers, c-2 has no pod.
	missedAdd := highest(plantest.OnClaims(State{Size: 3, Bootstrapped: true, LastMembers: plantest.LastVoters(0, 1),
		Pods:     plantest.Pods(plantest.Running(1, 0, 1, 2)),
		Claims:   plantest.Claims(deleting(plantest.Claim(0)), plantest.Claim(1), plantest.MarkedBy(plantest.Claim(2), 7)),
		Statuses: plantest.Answering(1, 42), Now: plantest.PassAt}))
	// Size 3: status lists c-2 as a learner; it may have been promoted since. c-0's data is
	// gone, c-1 answers, c-2's pod runs and does not answer yet.
	promoted := func(answersAsLearner bool) State {
		s := plantest.LostQuorum(3, plantest.Pods(plantest.Running(1, 0, 1, 2), plantest.Running(2, 0, 1, 2)),
			plantest.Claims(deleting(plantest.Claim(0)), plantest.Claim(1), plantest.Claim(2)), plantest.Answering(1, 42))
		s.LastMembers[2].Learner = true
		if answersAsLearner {
			s.Statuses[2] = etcdfacts.Status{ID: 102, RaftIndex: 40, IsLearner: true}
		}
		return highest(s)
	}
	// Size 5: status lists c-0, c-1, c-2, c-4 (it missed member 7 at c-3); c-1, c-2 and c-4
	// lost their claims; c-0 answers at index 40, and c-3, the newer member, at 50 if it does.
	missedHigher := func(answers bool) State {
		st := plantest.Answering(0, 40)
		if answers {
			st[3] = etcdfacts.Status{ID: 7, RaftIndex: 50, RaftTerm: 3}
		}
		return highest(plantest.OnClaims(State{Size: 5, Bootstrapped: true, LastMembers: plantest.LastVoters(0, 1, 2, 4),
			Pods:     plantest.Pods(plantest.Running(0, 0, 1, 2, 3, 4), plantest.Running(3, 0, 1, 2, 3, 4)),
			Claims:   plantest.Claims(plantest.Claim(0), plantest.MarkedBy(plantest.Claim(3), 7)),
			Statuses: st, Now: plantest.PassAt}))
	}
	// A claim at c-5, above spec.size, marked with a member status does not list: a member
	// removed by a scale-down whose claim was retained. It is not counted.
	retained := plantest.LostQuorum(3, plantest.Pods(plantest.Running(0, 0, 1, 2)),
		plantest.Claims(plantest.Claim(0), plantest.MarkedBy(plantest.Claim(5), 9)), plantest.Answering(0, 42))

	// Status cleared (or a cluster applied again over retained claims): c-0 and c-2 are marked,
	// c-0 flagged as its member's removed (dropped by a survivor's --force-new-cluster).
	cleared := plantest.OnClaims(State{Size: 3, Bootstrapped: true,
		Claims: plantest.Claims(removed(plantest.Claim(0)), plantest.Claim(2)), Now: plantest.PassAt})

	runPlanCases(t, []planCase{
		{
			name:     "no status: the marked claims are restarted on their data, not one flagged as its member's removed",
			state:    cleared,
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: []int{2}},
			progress: api.ReasonRestartingMember,
		},
		{
			name:     "a member added since status was written (its claim marked below spec.size) holds data: no loss for good, no survivor chosen",
			state:    missedAdd,
			progress: api.ReasonElectingLeader,
		},
		{
			name: "... a claim flagged as its member's removed is not counted: the loss for good is recovered from",
			state: func() State {
				s := missedAdd
				s.Claims = plantest.Claims(deleting(plantest.Claim(0)), plantest.Claim(1), removed(plantest.MarkedBy(plantest.Claim(2), 7)))
				return s
			}(),
			want:     &Action{Kind: ActionChooseSurvivor, Ordinal: 1, MemberID: 101, RaftIndex: 42},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name: "... past the election bound: NoQuorum names it, its claim, and what to do",
			state: func() State {
				s := missedAdd
				s.ElectingSince, s.Now = plantest.PassAt, plantest.PassAt.Add(DefaultElectionBound)
				return s
			}(),
			blocked: api.ReasonNoQuorum,
			message: []string{"c-2 (member 7 on claim data-c-2; its pod is gone)", "kubectl delete pvc data-c-2"},
		},
		{
			name:     "a learner status listed may have been promoted since: counted while it does not answer, no survivor chosen",
			state:    promoted(false),
			progress: api.ReasonElectingLeader,
		},
		{
			name:     "... one that answers as a learner is not counted: the loss for good is recovered from",
			state:    promoted(true),
			want:     &Action{Kind: ActionChooseSurvivor, Ordinal: 1, MemberID: 101, RaftIndex: 42},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name:    "a member status missed may hold the highest raft index: the survivor is not chosen before it answers",
			state:   missedHigher(false),
			blocked: api.ReasonQuorumLost,
			message: []string{"waiting for c-3", "to answer before the survivor"},
		},
		{
			name:     "... and is chosen when it holds the highest",
			state:    missedHigher(true),
			want:     &Action{Kind: ActionChooseSurvivor, Ordinal: 3, MemberID: 7, RaftIndex: 50},
			progress: api.ReasonRecoveringQuorum,
			blocked:  api.ReasonQuorumLost,
		},
		{
			name:    "a retained claim above spec.size marked with a removed member is not counted",
			state:   retained,
			blocked: api.ReasonQuorumLost,
			message: []string{"2 of 3 voting members lost their data"},
		},
	})
}
