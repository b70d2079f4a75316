package plan_test

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// The same states under the production bounds (State.Bounds zero) and under the shorter
// bounds the end-to-end suite runs the operator with: each rule counts the bound it is given,
// and a zero field is the production default.
func TestPlanBounds(t *testing.T) {
	short := Bounds{StuckAfter: 10 * time.Second, Comeback: time.Minute, Election: 5 * time.Second}
	with := func(s State, b Bounds) State { s.Bounds = b; return s }

	// A learner whose pod has failed to pull its image for 20 s.
	learnerStuck := State{Size: 3, MembersKnown: true, Now: plantest.PassAt,
		Members: []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, false)},
		Pods:    plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.PullFails(plantest.Joining(2, true, 0, 1, 2), 20*time.Second))}
	// Member 2 was rolled onto 3.6 90 s ago and cannot pull its image.
	old, cur := "3.5.35", "3.6.16"
	pulling := plantest.Rolled(2, cur, false, 90*time.Second)
	pulling.Waiting = "ImagePullBackOff: Back-off pulling image"
	rolling := rolloutState(cur, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
		plantest.Pods(plantest.Rolled(0, old, true, time.Hour), plantest.Rolled(1, old, true, time.Hour), pulling),
		map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000)})
	// Members have answered without a member list for 10 s.
	electing := plantest.NoList(plantest.PassAt.Add(10*time.Second), plantest.PassAt)

	runPlanCases(t, []planCase{
		{
			name:     "production bounds: a learner whose pod cannot start for 20 s is waited for",
			state:    learnerStuck,
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for learner c-2"},
		},
		{
			name:     "a pod bound of 10 s: the same learner is removed",
			state:    with(learnerStuck, Bounds{StuckAfter: short.StuckAfter}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
			message:  []string{"never started", "ImagePullBackOff"},
		},
		{
			name:     "production bounds: a member rolled 90 s ago and not back is waited for",
			state:    rolling,
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for member c-2", "ImagePullBackOff"},
		},
		{
			name:    "a comeback bound of a minute: the rollout stops, and says the bound it counted",
			state:   with(rolling, short),
			blocked: api.ReasonRolloutStuck,
			message: []string{"member c-2 did not come back on 3.6.16 within 1m0s", "ImagePullBackOff"},
		},
		{
			name:     "production bounds: members answering without a list for 10 s are an election",
			state:    electing,
			progress: api.ReasonElectingLeader,
		},
		{
			name:    "an election bound of 5 s: the same is reported as no quorum",
			state:   with(electing, Bounds{Election: short.Election}),
			blocked: api.ReasonNoQuorum,
			message: []string{"no leader since"},
		},
	})
}

func TestBoundsWithDefaults(t *testing.T) {
	if got := (Bounds{}).WithDefaults(); got != DefaultBounds() {
		t.Errorf("zero bounds with defaults = %+v, want %+v", got, DefaultBounds())
	}
	b := Bounds{StuckAfter: time.Second}.WithDefaults()
	if b.StuckAfter != time.Second || b.Comeback != DefaultComebackBound || b.Election != DefaultElectionBound {
		t.Errorf("bounds with defaults = %+v: want StuckAfter kept, the others defaulted", b)
	}
}
