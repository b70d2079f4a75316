package plan_test

import (
	"testing"
	"time"

	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// TestPlanJoinAfterTwoLearners: while a pod's etcd runs with --max-learners=2 (its log may
// hold the add of a second learner), a member joins only on a pod that takes two learners
// too, even when the pods are built for 3.5 (plan_join.go).
func TestPlanJoinAfterTwoLearners(t *testing.T) {
	newer, older := "3.6.16", "3.5.35"
	hour := time.Hour
	on := func(o int, v string, flag int) PodView {
		p := plantest.Rolled(o, v, v != older, hour)
		p.MaxLearners = flag
		return p
	}
	status := func(o int, v string) etcdfacts.Status { return downgrading(o, v, "3.5.0", "") }
	// A downgrade from 3.6 to 3.5 on claims, cancelled once member 1 was lost and removed
	// with member 2 on 3.5 already: member 0, the leader, still runs the 3.6 it ran when the
	// cluster grew with two learners.
	state := func(persistent bool, ms []MemberView, pods ...PodView) State {
		st := map[int]etcdfacts.Status{}
		for _, m := range ms {
			for _, p := range pods {
				if p.Ordinal == m.Ordinal {
					st[m.Ordinal] = status(m.Ordinal, p.Version)
				}
			}
		}
		s := rolloutState(TargetVersion(older, LowestVersion(st), persistent, ""), persistent, ms, plantest.Pods(pods...), st)
		s.SpecVersion, s.Version = older, LowestVersion(st)
		return s
	}
	two := []MemberView{plantest.Leader(0), plantest.Voter(2)}
	lead36, two35 := on(0, newer, LearnerCap), on(2, older, 0)
	scaleUp := state(true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, lead36, on(1, older, 0), two35)
	scaleUp.Size = 4
	all35 := state(true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, on(0, older, 0), on(1, older, 0), two35)
	all35.Size = 4
	restart := state(true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, lead36, two35)
	restart.Claims = plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2))
	joining := func(v string, flag int) PodView {
		p := plantest.Joining(1, true, 0, 1, 2)
		p.Version, p.MaxLearners = v, flag
		return p
	}
	tests := []struct {
		name     string
		state    State
		kind     ActionKind
		ordinal  int
		version  string
		learners int
	}{
		{"member lost mid-downgrade, the leader on 3.6 with the flag: it joins on 3.6 with the flag",
			state(true, two, lead36, two35), ActionCreatePod, 1, newer, LearnerCap},
		{"its pod made on 3.5 (before this rule): made again, not added",
			state(true, two, lead36, two35, joining(older, 0)), ActionDeletePod, 1, "", 0},
		{"its pod made on 3.6 with the flag: added",
			state(true, two, lead36, two35, joining(newer, LearnerCap)), ActionAddLearner, 1, "", 0},
		{"the 3.6 pod without the flag (an earlier operator's): no second learner was ever added, it joins on 3.5",
			state(true, two, on(0, newer, 0), two35), ActionCreatePod, 1, older, 0},
		{"a scale-up once the downgrade was cancelled: the new member on 3.6 with the flag",
			scaleUp, ActionCreatePod, 3, newer, LearnerCap},
		{"a scale-up once every member runs 3.5 (each restarted since): on 3.5",
			all35, ActionCreatePod, 3, older, 0},
		{"a member restarting on its data is not a join: on 3.5",
			restart, ActionCreatePod, 1, older, 0},
		{"on emptyDir (an upgrade from 3.5 set back): the rule does not apply",
			state(false, two, lead36, two35), ActionCreatePod, 1, older, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.state.Name = "c"
			d := Plan(tc.state)
			a := d.Action
			if a == nil || a.Kind != tc.kind || a.Ordinal != tc.ordinal {
				t.Fatalf("action = %+v, want %s of %d (message %q)", a, tc.kind, tc.ordinal, d.Message)
			}
			if a.PodVersion != tc.version || a.MaxLearners != tc.learners {
				t.Errorf("pod built on %q with --max-learners=%d, want %q and %d", a.PodVersion, a.MaxLearners, tc.version, tc.learners)
			}
		})
	}
}
