package plan

import (
	"slices"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// Rule 4 of the planner (see plan.go): while etcd's membership holds learners, they are
// finished first, and no later rule runs. With one voter (a cluster bootstrapping) or voters
// that all answer, the next member is added as a learner before the ones there are promoted,
// when every member's etcd lets the membership hold one more learner.

// LearnerCap is how many learners the operator lets the membership hold at once, and the
// --max-learners every new member pod of etcd 3.6 or later is started with (withPodVersion).
// Two is what growing to the sizes clusters run at asks for: a cluster bootstrapped to three
// members (the default size) adds both its learners while the seed is its only voter, which
// etcd lets add a member at any time, and a cluster grown from three to five has both its new
// members catch up at once. More would have the one voter of a bootstrapping cluster send more
// snapshots at once (the full data set each, after a restore from a backup) while it serves
// its clients alone. It must never be lowered in a later release: a member replays the log
// since its last snapshot (its own when it restarts on its data, the leader's when it joins),
// and one started with a lower limit than the learners the log held rejects that entry:
// restarted, it stops; joining, its membership parts from the others' (docs/upgrades.md).
const LearnerCap = 2

// planLearners is rule 4. A learner that must go is removed, unless another learner has not
// started yet; then the next member is added as one more learner where addAnotherLearner
// allows it; then the learner of the lowest ordinal that answers is promoted; otherwise the
// learners are waited for, and the pods of the members after them are made meanwhile.
func planLearners(s State) (Decision, bool) {
	var learners []MemberView
	for _, m := range SortedMembers(s.Members) {
		if m.Learner {
			learners = append(learners, m)
		}
	}
	if len(learners) == 0 {
		return Decision{}, false
	}
	if d, ok := removeLearner(s, learners); ok {
		return d, true
	}
	if d, ok := addAnotherLearner(s, learners); ok {
		return d, true
	}
	for _, m := range learners {
		if m.Healthy {
			return step(s, Action{Kind: ActionPromote, Ordinal: m.Ordinal, MemberID: m.ID},
				reasonFor(s, m.Ordinal), "promoting learner %s", m.Ordinal), true
		}
	}
	if d, ok := podAheadOf(s, s.Members); ok {
		return d, true
	}
	next := learners[0]
	if i := slices.IndexFunc(learners, func(m MemberView) bool { return !learnerStarted(m) }); i >= 0 {
		next = learners[i]
	}
	return waiting(s, reasonFor(s, next.Ordinal), "waiting for learner %s to start", next.Ordinal), true
}

// removeLearner removes a learner whose pod is gone or no longer wanted, or which does not
// answer and whose pod cannot start past the bound. Learners do not vote: removing one never
// costs quorum. Not a learner that has started while another has not: the pod of the one
// starting was built for the membership with it (etcd compares the two when the member
// joins), and is left to start, or to go itself, first.
func removeLearner(s State, learners []MemberView) (Decision, bool) {
	for _, m := range learners {
		p, hasPod := s.Pods[m.Ordinal]
		why := ""
		switch {
		case !hasPod || p.Terminating || m.Ordinal >= s.Size:
			why = "removing learner %s, whose pod is gone or no longer wanted"
		case !m.Healthy && podStuck(s, p):
			why = "removing learner %s, which never started: its pod cannot start (" + escape(p.Problem.String()) + ")"
		default:
			continue
		}
		if learnerStarted(m) && slices.ContainsFunc(learners, func(o MemberView) bool { return !learnerStarted(o) }) {
			continue
		}
		return step(s, Action{Kind: ActionRemoveMember, Ordinal: m.Ordinal, MemberID: m.ID}, reasonFor(s, m.Ordinal), why, m.Ordinal), true
	}
	return Decision{}, false
}

// learnerStarted: the learner's etcd has started, past etcd's check of its --initial-cluster
// against the membership: it answers, or etcd lists it by the name it publishes once started.
func learnerStarted(m MemberView) bool { return m.Name != "" || m.Healthy }

// addAnotherLearner adds the next member (rule 7's choice: lowest missing ordinal, its pod
// published and built for the membership with it) as a learner beside the learners there,
// before any of them is promoted. Promoting first would make a second voter, and etcd then
// refuses every add until the leader has been connected to a majority of the voters for a
// while (its strict reconfiguration check, which it skips for a cluster of one voter); the
// learners there would have been promoted by the time that wait ends.
//
// Why it is safe, from etcd's own rules:
//   - Learners do not vote. An add changes neither the voting members nor the quorum; etcd's
//     check of an add counts the voting members only. The one change of quorum is a
//     promotion, one at a time as before, each a membership change the operator waits for,
//     and etcd promotes only a learner that has caught up with the leader (isLearnerReady)
//     while enough members have started (IsReadyToPromoteMember). Growing from one voter to
//     two is the same promotion as when learners came one at a time: 1 of 1 to 2 of 2; the
//     learner added before it changes no quorum.
//   - A joining member's etcd compares its --initial-cluster with the membership when it
//     starts. The next member's pod was made listing every member before it, the learners
//     there included (podAhead, planGrow's `want`), and planGrow adds it only when it does;
//     every learner there has started (passed that check itself), and none is removed while
//     another has not (removeLearner), so no starting learner sees its membership change.
//   - Every member checks the number of learners with its own --max-learners: when it
//     applies the add, when it joins, when it restarts. So the add is made only when every
//     member's pod, and the joining member's, was started with etcd 3.6 or later and a
//     --max-learners of at least the learners there will be (learnersFit); never with a
//     member on 3.5, or whose pod has no flag (made before it, or by an earlier operator).
//   - Not while a voter does not answer: etcd would refuse the add for as long, and the
//     learners there would wait for their promotion meanwhile. Not during etcd's downgrade,
//     when etcd lets nobody join, nor while pods are built for a version without the flag
//     (a downgrade to 3.5 cancelled with a member on it): no such add is made after etcd
//     lowered the cluster version to 3.5, which is what keeps a member restarted on 3.5 from
//     replaying one (plan_join.go).
func addAnotherLearner(s State, learners []MemberView) (Decision, bool) {
	voting, healthy := VotingCounts(s.Members)
	if s.DowngradeTarget != "" || !etcdfacts.TakesMaxLearners(s.TargetVersion) || (voting > 1 && healthy < voting) || len(learners) >= LearnerCap {
		return Decision{}, false
	}
	if slices.ContainsFunc(learners, func(m MemberView) bool { return !learnerStarted(m) }) {
		return Decision{}, false
	}
	members := map[int]MemberView{}
	for _, m := range s.Members {
		members[m.Ordinal] = m
	}
	d := planGrow(s, members)
	if d.Action == nil || d.Action.Kind != ActionAddLearner || !learnersFit(s, len(learners)+1, d.Action.Ordinal) {
		return Decision{}, false
	}
	return d, true
}

// learnersFit: the etcd of every member, and of the member joining, lets the membership hold
// n learners. Each is read from the member's own pod (its version and its --max-learners): a
// member whose pod is not there now may come back on a pod made otherwise, and is not counted
// on. A pod's etcd version is its image's; an image changed in place (ImageChange) goes from
// 3.6 to 3.7 or back only, both of which take the flag: 3.5 pods differ in more than their
// image (their probes), so they are made anew.
func learnersFit(s State, n, joining int) bool {
	ordinals := []int{joining}
	for _, m := range s.Members {
		ordinals = append(ordinals, m.Ordinal)
	}
	for _, o := range ordinals {
		p, ok := s.Pods[o]
		if !ok || p.Terminating || learnersAllowed(p) < n {
			return false
		}
	}
	return true
}

// learnersAllowed is how many learners the etcd of pod p lets the membership hold: its
// --max-learners, on a version that takes the flag; otherwise one (etcd's default, and 3.5's
// only value).
func learnersAllowed(p PodView) int {
	if p.MaxLearners > 1 && etcdfacts.TakesMaxLearners(p.Version) {
		return p.MaxLearners
	}
	return 1
}
