package plan_test

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

// takesTwo is p on etcd 3.6, started with --max-learners=2, as this operator makes pods.
func takesTwo(p PodView) PodView { p.Version, p.MaxLearners = "3.6.16", LearnerCap; return p }

// noFlag is p on etcd 3.6 without --max-learners: made by an operator before the flag.
func noFlag(p PodView) PodView { p.Version, p.MaxLearners = "3.6.16", 0; return p }

// on35 is p on etcd 3.5, which holds one learner and has no flag.
func on35(p PodView) PodView { p.Version, p.MaxLearners = "3.5.21", 0; return p }

// startedLearner is a learner etcd lists by name (it has started) that does not answer now.
func startedLearner(o int) MemberView { m := learner(o, true); m.Healthy = false; return m }

// answeringLearner is a learner that answers before etcd lists its name.
func answeringLearner(o int) MemberView { m := learner(o, true); m.Name = ""; return m }

// growing is a cluster growing to size from the members, with the pods given, building pods
// for etcd 3.6.
func growing(size int, members []MemberView, pods ...PodView) State {
	return State{Size: size, MembersKnown: true, Members: members, Pods: plantest.Pods(pods...),
		TargetVersion: "3.6.16", Now: plantest.PassAt}
}

func TestPlanLearners(t *testing.T) {
	seed, first := takesTwo(plantest.Running(0)), takesTwo(plantest.Running(1, 0, 1))
	second := takesTwo(plantest.Joining(2, true, 0, 1, 2))
	addSecond := &Action{Kind: ActionAddLearner, Ordinal: 2}
	promoteFirst := &Action{Kind: ActionPromote, Ordinal: 1, MemberID: 101}
	five := func(members []MemberView, pods ...PodView) State {
		all := []PodView{takesTwo(plantest.Running(0, 0, 1, 2)), takesTwo(plantest.Running(1, 0, 1, 2)), takesTwo(plantest.Running(2, 0, 1, 2))}
		return growing(5, members, append(all, pods...)...)
	}
	three := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	stuck := plantest.Troubled(takesTwo(plantest.Joining(2, true, 0, 1, 2)), ReasonCrashLoop, "container etcd restarted 4 times", time.Hour)
	runPlanCases(t, []planCase{
		{
			name:     "bootstrap to 3: learner 1 started, every pod takes two learners: add member 2 before promoting 1",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first, second),
			want:     addSecond,
			progress: api.ReasonScalingUp,
		},
		{
			name: "pods built for 3.5 (a downgrade to it cancelled): no second learner, whatever the pods take",
			state: func() State {
				s := growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first, second)
				s.TargetVersion = "3.5.35"
				return s
			}(),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 1 answers before etcd lists its name: it has started",
			state:    growing(3, []MemberView{plantest.Leader(0), answeringLearner(1)}, seed, first, second),
			want:     addSecond,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 1 listed by name but not answering now: it has started, member 2 may join",
			state:    growing(3, []MemberView{plantest.Leader(0), startedLearner(1)}, seed, first, second),
			want:     addSecond,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 1 not started: member 2 waits (learner 1's pod lists the members without it)",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, false)}, seed, takesTwo(plantest.Joining(1, true, 0, 1)), second),
			progress: api.ReasonScalingUp,
		},
		{
			name:     "the seed's pod has no --max-learners (an earlier operator's): one learner at a time",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, noFlag(plantest.Running(0)), first, second),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 1's pod has no --max-learners: one learner at a time",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, noFlag(plantest.Running(1, 0, 1)), second),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "the joining pod has no --max-learners: one learner at a time",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first, noFlag(plantest.Joining(2, true, 0, 1, 2))),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "the seed on etcd 3.5 (a rollout across 3.5 under way): one learner at a time",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, on35(plantest.Running(0)), first, second),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name: "a 3.5 pod is never counted on for the flag, whatever its command line says",
			state: growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first,
				func() PodView { p := on35(plantest.Joining(2, true, 0, 1, 2)); p.MaxLearners = 2; return p }()),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name: "building pods for 3.5 (a pod of a version without the flag joins): one learner at a time",
			state: func() State {
				s := growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first, on35(plantest.Joining(2, true, 0, 1, 2)))
				s.TargetVersion = "3.5.21"
				return s
			}(),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name: "etcd's downgrade is enabled: nobody joins, the learner is promoted",
			state: func() State {
				s := growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first, second)
				s.DowngradeTarget = "3.6.0"
				return s
			}(),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "the joining pod is not published yet: promote rather than wait for it",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first, takesTwo(plantest.Joining(2, false, 0, 1, 2))),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "two learners (the cap): promote the lowest ordinal",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true), learner(2, true)}, seed, first, takesTwo(plantest.Running(2, 0, 1, 2))),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "operator killed after adding member 2: learner 1 is promoted while 2 starts",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true), learner(2, false)}, seed, first, second),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 1 promoted, learner 2 starting: wait for it",
			state:    growing(3, []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, false)}, seed, first, second),
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 2 started: promote it",
			state:    growing(3, []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, true)}, seed, first, second),
			want:     &Action{Kind: ActionPromote, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 1's pod gone while learner 2 starts: 2's pod was made for the membership with 1, so 1 stays until 2 has started",
			state:    growing(3, []MemberView{plantest.Leader(0), startedLearner(1), learner(2, false)}, seed, second),
			progress: api.ReasonScalingUp,
			message:  []string{"waiting for learner c-2"},
		},
		{
			name:     "learner 1's pod gone, learner 2 started: remove 1",
			state:    growing(3, []MemberView{plantest.Leader(0), startedLearner(1), learner(2, true)}, seed, takesTwo(plantest.Running(2, 0, 1, 2))),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 1, MemberID: 101},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "learner 2 cannot start past the bound: it goes first, itself, before learner 1 whose pod is gone",
			state:    growing(3, []MemberView{plantest.Leader(0), startedLearner(1), learner(2, false)}, seed, stuck),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "scaled down to one with two learners: the one not started goes first",
			state:    growing(1, []MemberView{plantest.Leader(0), learner(1, true), learner(2, false)}, seed, first, second),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingDown,
		},
		{
			name:     "then, pod 2 gone, the other",
			state:    growing(1, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 1, MemberID: 101},
			progress: api.ReasonScalingDown,
		},
		{
			name:     "pod 2 made for a membership without 1: promote 1 (rule 7 makes pod 2 again after), no pod deleted under a learner",
			state:    growing(3, []MemberView{plantest.Leader(0), learner(1, true)}, seed, first, takesTwo(plantest.Joining(2, true, 0, 2))),
			want:     promoteFirst,
			progress: api.ReasonScalingUp,
		},
		{
			name:     "3 to 5: learner 3 started, pod 4 published: add 4 before promoting 3",
			state:    five(append(three, learner(3, true)), takesTwo(plantest.Running(3, 0, 1, 2, 3)), takesTwo(plantest.Joining(4, true, 0, 1, 2, 3, 4))),
			want:     &Action{Kind: ActionAddLearner, Ordinal: 4},
			progress: api.ReasonScalingUp,
		},
		{
			name: "3 to 5: a voter does not answer: etcd would refuse the add meanwhile, so 3 is promoted",
			state: five([]MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2)), learner(3, true)},
				takesTwo(plantest.Running(3, 0, 1, 2, 3)), takesTwo(plantest.Joining(4, true, 0, 1, 2, 3, 4))),
			want:     &Action{Kind: ActionPromote, Ordinal: 3, MemberID: 103},
			progress: api.ReasonScalingUp,
		},
		{
			name: "3 to 5: a voter's pod going away (it will come back on another pod): one learner at a time",
			state: func() State {
				s := five(append(three, learner(3, true)), takesTwo(plantest.Running(3, 0, 1, 2, 3)), takesTwo(plantest.Joining(4, true, 0, 1, 2, 3, 4)))
				s.Pods[1] = terminating(s.Pods[1])
				return s
			}(),
			want:     &Action{Kind: ActionPromote, Ordinal: 3, MemberID: 103},
			progress: api.ReasonScalingUp,
		},
	})
}

// Every pod the planner builds for etcd 3.6 or later is started with --max-learners at the
// cap; none for 3.5, which would refuse the flag.
func TestPlanBuildsPodsWithMaxLearners(t *testing.T) {
	for version, want := range map[string]int{"3.6.16": LearnerCap, "3.7.3": LearnerCap, "3.5.21": 0} {
		s := growing(3, []MemberView{plantest.Leader(0)}, takesTwo(plantest.Running(0)))
		s.TargetVersion = version
		d := Plan(s)
		if d.Action == nil || d.Action.Kind != ActionCreatePod || d.Action.PodVersion != version || d.Action.MaxLearners != want {
			t.Errorf("building a pod for %s: %+v, want CreatePod with max learners %d", version, d.Action, want)
		}
	}
}
