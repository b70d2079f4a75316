package plan_test

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// The rollout and the disruption budget: the deletion of a serving member's pod is an
// eviction, and no step takes a serving member down while the budget allows none; a member
// that is down, or the only member, is rolled whatever the budget says.
func TestPlanRolloutWithinTheBudget(t *testing.T) {
	old, cur := "3.5.35", "3.6.16"
	hour := time.Hour
	all := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	allOld := map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000), 2: plantest.Reporting(2, old, 1000)}
	outdated := func(v string) map[int]PodView {
		return plantest.Pods(plantest.Rolled(0, v, true, hour), plantest.Rolled(1, v, true, hour), plantest.Rolled(2, v, true, hour))
	}
	allows := func(n int) *BudgetView {
		return &BudgetView{Name: "c", Counted: true, Allowed: n, Healthy: 2 + n, Desired: 2, Since: plantest.PassAt.Add(-10 * time.Second)}
	}
	drained := allows(0)
	drained.Evicted = []string{"c-1"}
	longAgo := allows(0)
	longAgo.Since = plantest.PassAt.Add(-DefaultComebackBound - time.Second)
	with := func(s State, b *BudgetView) State { s.Budget = b; return s }
	upgrade := func(b *BudgetView) State { return with(rolloutState(cur, true, all, outdated(old), allOld), b) }

	// The leader is the one member left to roll.
	leaderLast := func(b *BudgetView) State {
		return with(rolloutState(cur, true, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, cur, false, hour), plantest.Rolled(2, cur, false, hour)),
			map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, cur, 1000), 2: plantest.Reporting(2, cur, 1000)}), b)
	}
	// Member 2 is out of date and down (its pod crash-loops, say).
	downOne := func(b *BudgetView) State {
		return with(rolloutState(cur, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))}, outdated(old),
			map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000)}), b)
	}
	single := func(b *BudgetView) State {
		s := rolloutState(cur, true, []MemberView{plantest.Leader(0)}, plantest.Pods(plantest.Rolled(0, old, true, hour)),
			map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000)})
		s.Size, s.Budget = 1, b
		return s
	}
	imageOnly := func(b *BudgetView) State {
		ps := outdated("3.7.3")
		for o, p := range ps {
			p.ImageOnly = true
			ps[o] = p
		}
		return with(rolloutState("3.6.16", true, all, ps, map[int]etcdfacts.Status{0: plantest.Reporting(0, "3.7.3", 1000),
			1: plantest.Reporting(1, "3.7.3", 1000), 2: plantest.Reporting(2, "3.7.3", 1000)}), b)
	}
	to37 := func(b *BudgetView) State {
		return with(rolloutState("3.7.3", true, all, outdated(cur), map[int]etcdfacts.Status{0: plantest.Reporting(0, cur, 1000),
			1: plantest.Reporting(1, cur, 1000), 2: plantest.Reporting(2, cur, 1000)}), b)
	}

	// The API server has refused to evict member 2's pod since refused before the pass.
	twoBudgets := "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
	refusedFor := func(s State, refused time.Duration) State {
		p := s.Pods[2]
		p.EvictionRefusedSince, p.EvictionRefusal = plantest.PassAt.Add(-refused), twoBudgets
		s.Pods[2] = p
		return s
	}

	runPlanCases(t, []planCase{
		{
			name:     "an eviction refused for longer than the bound although the budget allows one: tried again, and Degraded quotes the API server and says what to do",
			state:    refusedFor(upgrade(allows(1)), DefaultComebackBound+time.Second),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
			blocked:  api.ReasonEvictionRefused,
			message: []string{"refused to evict pod c-2 for more than 2m0s", twoBudgets, "another PodDisruptionBudget selects the member pods",
				"the one the operator keeps is c"},
		},
		{
			name:     "... not within the bound: the rollout waits on the refusals, Progressing only",
			state:    refusedFor(upgrade(allows(1)), DefaultComebackBound-time.Second),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "refused for longer than the bound with no budget of the cluster's own: the one of its name is not the operator's",
			state:    refusedFor(upgrade(nil), time.Hour),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
			blocked:  api.ReasonEvictionRefused,
			message:  []string{"no disruption budget of its own", "named c is not the operator's"},
		},
		{
			name:     "a pod refused long ago whose member is down now is deleted, not evicted: nothing is refused",
			state:    refusedFor(downOne(allows(1)), time.Hour),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "the budget allows one: the healthy member's pod is evicted",
			state:    upgrade(allows(1)),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
			message:  []string{"evicted within the disruption budget"},
		},
		{
			name:     "no budget of the cluster's own: evicted all the same, the API server arbitrates",
			state:    upgrade(nil),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "a drain evicted a member the cluster does not miss yet: the budget allows none, the rollout waits and says why",
			state:    upgrade(drained),
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for the disruption budget c", "before member c-2 is rolled", "2 member pods healthy, 2 needed", "evicted and not gone yet: c-1", "0 of 3 members done"},
		},
		{
			name:     "a budget whose current spec is not counted yet holds the rollout too",
			state:    upgrade(&BudgetView{Name: "c", Allowed: 1}),
			progress: api.ReasonUpgrading,
			message:  []string{"has not counted its current spec"},
		},
		{
			name:     "held past the bound although every member is back: Degraded says so, Progressing still waits",
			state:    upgrade(longAgo),
			progress: api.ReasonUpgrading,
			blocked:  api.ReasonDisruptionBudget,
			message:  []string{"waiting for the disruption budget c", "waited more than 2m0s for the disruption budget c"},
		},
		{
			name:     "the leader is not moved away while the budget allows none",
			state:    leaderLast(allows(0)),
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for the disruption budget c", "before member c-0 is rolled"},
		},
		{
			name:     "once it allows one, leadership moves first",
			state:    leaderLast(allows(1)),
			want:     &Action{Kind: ActionMoveLeader, Ordinal: 0, MemberID: 100, Transferee: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "a member that is down is rolled whatever the budget says, by a plain delete: a repair is never held",
			state:    downOne(allows(0)),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "a single member's budget never allows a disruption: it is rolled by a plain delete, the outage its user chose",
			state:    single(allows(0)),
			want:     &Action{Kind: ActionRollMember, Ordinal: 0, MemberID: 100},
			progress: api.ReasonUpgrading,
			message:  []string{"restarting member c-0 on its data"},
		},
		{
			name:     "a restart in place takes a serving member down too: it waits for the budget",
			state:    imageOnly(allows(0)),
			progress: api.ReasonDowngrading,
			message:  []string{"waiting for the disruption budget c"},
		},
		{
			name:     "... and goes ahead once it allows one",
			state:    imageOnly(allows(1)),
			want:     &Action{Kind: ActionRestartInPlace, Ordinal: 2, MemberID: 102},
			progress: api.ReasonDowngrading,
		},
		{
			name:     "so does the removal of a member to be replaced on a new claim",
			state:    to37(allows(0)),
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for the disruption budget c"},
		},
	})
}
