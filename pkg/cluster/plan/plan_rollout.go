package plan

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// Rule 8 of the planner (see plan.go): roll the member pods that were built from an earlier
// spec (version, spec.pod, or the operator's own template), one member at a time.

// The actions of a rollout.
const (
	// ActionPatchPod brings a member pod's labels and annotations in line, in place: those from
	// spec.pod, and the operator's own that can change without a restart (the metrics port's).
	ActionPatchPod ActionKind = "PatchPod"
	// ActionRollMember deletes an out-of-date member pod, for the member to be restarted on
	// its data (claims) or replaced (emptyDir) on the current template.
	ActionRollMember ActionKind = "RollMember"
	// ActionRestartInPlace changes the etcd image of a member pod that is out of date in that
	// image alone: the kubelet restarts the container in the same pod, on the same data
	// (claim or emptyDir) and address.
	ActionRestartInPlace ActionKind = "RestartInPlace"
)

const (
	// caughtUpLag is how many raft entries a member may have left to apply behind the
	// leader's index and still count as caught up: writes go on during a rollout, so a
	// following member is always a few entries behind; one still replaying its log or a
	// snapshot is far more behind.
	caughtUpLag = 64
	// minVersionFor36 is the oldest 3.5 release etcd's upgrade guide lets a member go to 3.6
	// from: earlier ones can turn promoted members back into learners (etcd issue #19557) or
	// bring back removed ones.
	minVersionFor36 = "3.5.32"
)

// planRollout is rule 8.
func planRollout(s State) Decision {
	for _, o := range SortedOrdinals(s.Pods) {
		if p := s.Pods[o]; !p.Terminating && p.StaleMetadata {
			return step(s, Action{Kind: ActionPatchPod, Ordinal: o}, api.ReasonRollingPods,
				"patching the labels and annotations of pod %s in place", o)
		}
	}
	if d, ok := planDowngrade(s); ok {
		return d
	}
	var outdated []MemberView
	for _, m := range SortedMembers(s.Members) {
		if p, ok := s.Pods[m.Ordinal]; ok && !m.Learner && !p.Terminating && p.Outdated {
			outdated = append(outdated, m)
		}
	}
	reason := rolloutReason(s)
	if len(outdated) == 0 {
		return waitForRestartedInPlace(s, reason)
	}
	done := len(s.Members) - len(outdated)
	leader, hasLeader := leaderMember(s.Members)
	if !hasLeader {
		return Decision{Progress: reason, Message: "waiting for the cluster to elect a leader before the next member is rolled"}
	}
	if d, ok := rolloutGate(s, leader, reason, done); ok {
		return d
	}
	// A member that is down anyway goes first: rolling it costs no quorum, and a member stuck
	// on a bad version is rolled back this way once spec.version is set back.
	for _, m := range slices.Backward(outdated) {
		if !m.Healthy {
			return rollMember(s, m, reason, done)
		}
	}
	next := outdated[len(outdated)-1]
	for _, m := range slices.Backward(outdated) {
		if !m.Leader {
			next = m
			break
		}
	}
	return rollMember(s, next, reason, done)
}

// rolloutGate holds the rollout until every member is back before another is rolled; only a
// member that is down and out of date (with a pod that is not going: one of those rolled) is
// not waited for, since it is the one rolled next. A member rolled that does not come back
// within the Comeback bound stops the rollout and says why.
func rolloutGate(s State, leader MemberView, reason api.ConditionReason, done int) (Decision, bool) {
	for _, m := range SortedMembers(s.Members) {
		if p, ok := s.Pods[m.Ordinal]; ok && !m.Healthy && p.Outdated && !p.Terminating {
			continue
		}
		why := notCaughtUp(s, m, leader)
		if why == "" {
			continue
		}
		p := s.Pods[m.Ordinal]
		if bound := s.bounds().Comeback; !p.Outdated && s.Now.Sub(p.rolledAt()) > bound {
			return Decision{Blocked: api.ReasonRolloutStuck, Message: fmt.Sprintf(
				"the rollout is stopped: member %s did not come back on %s within %s (%s); no other member is touched. Set spec.version (or spec.pod, or spec.tls.client) back to roll it back%s",
				naming.Name(s.Name, m.Ordinal), p.Version, bound, why, claimHint(s, m.Ordinal))}, true
		}
		return Decision{Progress: reason, Message: fmt.Sprintf("waiting for member %s before the next one is rolled: %s (%d of %d members done)",
			naming.Name(s.Name, m.Ordinal), why, done, len(s.Members))}, true
	}
	return Decision{}, false
}

// waitForRestartedInPlace is the end of a rollout whose last member was restarted in place:
// its pod is current once its image is changed, and the rollout waits for it to come back,
// as for any other member (a pod made again is waited for by the rules that make it).
func waitForRestartedInPlace(s State, reason api.ConditionReason) Decision {
	leader, hasLeader := leaderMember(s.Members)
	for _, m := range SortedMembers(s.Members) {
		p, ok := s.Pods[m.Ordinal]
		if !ok || p.RestartedAt.IsZero() || s.Now.Sub(p.RestartedAt) > s.bounds().Comeback {
			continue
		}
		why := "the cluster has no leader"
		if hasLeader {
			why = notCaughtUp(s, m, leader)
		}
		if why != "" {
			return Decision{Progress: reason, Message: fmt.Sprintf("waiting for member %s, restarted in place for the rollout: %s (%d of %d members done)",
				naming.Name(s.Name, m.Ordinal), why, len(s.Members)-1, len(s.Members))}
		}
	}
	return Decision{}
}

// rollDownMemberInPlace is the rollout when no member answers: a member pod whose etcd
// container does not run (an image that cannot be pulled, say) and is out of date in its
// image alone gets the current image in place. Its member serves nothing anyway, and its data
// stays in its pod: this is how a single member on emptyDir given a bad version comes back,
// with its data, once spec.version is set back. On a claim, an out-of-date pod that cannot
// start is made again (below).
func rollDownMemberInPlace(s State) (Decision, bool) {
	for _, o := range slices.Backward(SortedOrdinals(s.Pods)) {
		p := s.Pods[o]
		if p.Terminating || !p.ImageOnly || p.Waiting == "" || replacedOnUpgrade(s, o, p.MemberID) {
			continue
		}
		d := step(s, Action{Kind: ActionRestartInPlace, Ordinal: o, MemberID: p.MemberID}, rolloutReason(s),
			"restarting member %s in place on its data", o)
		d.Message += fmt.Sprintf(" with etcd %s: no member answers, and its etcd container waits (%s)", s.TargetVersion, p.Waiting)
		return d, true
	}
	// On a claim, a started member's pod that is out of date in more than its image and cannot
	// start past the bound (crash-loops, cannot be scheduled, ...) is made again from the
	// current spec, on its data: this is how a single member given a spec it cannot run on (a
	// value etcd refuses in spec.pod.env, a placement no node fits) comes back once the spec is
	// set back. Not a pod whose member-init found its data gone, nor across a version change
	// that replaces members.
	for _, o := range slices.Backward(SortedOrdinals(s.Pods)) {
		p := s.Pods[o]
		if !s.Persistent || p.Terminating || !p.Outdated || p.MemberID == 0 || p.DataLost || !podStuck(s, p) ||
			replacedOnUpgrade(s, o, p.MemberID) {
			continue
		}
		d := step(s, Action{Kind: ActionRollMember, Ordinal: o, MemberID: p.MemberID}, rolloutReason(s),
			"restarting member %s on its data", o)
		d.Message += fmt.Sprintf(" with the current pod template: no member answers, and its pod cannot start (%s)", p.Problem)
		return d, true
	}
	return Decision{}, false
}

// rollMember changes the image of member m's pod in place when only that changes, or else
// deletes the pod (restarted on its claim by rule 2, replaced by rules 5 and 7 on emptyDir),
// first moving leadership away if it leads, and only if the members left keep a healthy
// majority and the disruption budget allows taking down a member that serves.
func rollMember(s State, m MemberView, reason api.ConditionReason, done int) Decision {
	voting, healthy := VotingCounts(s.Members)
	if m.Healthy {
		healthy--
	}
	name := naming.Name(s.Name, m.Ordinal)
	// A cluster of one member has no majority to keep: rolling it means a short outage,
	// which its user chose with size 1. On a claim its member restarts on its data; on
	// emptyDir its data would go with the pod, so it is rolled there only in place.
	alone := voting == 1 && !m.Learner
	// Only the image changes, and etcd may restart on the member's data at the target
	// version: the container is restarted in its pod, whose volumes stay, emptyDir too.
	p := s.Pods[m.Ordinal]
	inPlace := p.ImageOnly && !replacedOnUpgrade(s, m.Ordinal, m.ID)
	if alone && !s.Persistent && !inPlace {
		return Decision{Blocked: api.ReasonQuorumAtRisk, Message: fmt.Sprintf(
			"member %s is the only member and keeps its data on an emptyDir: rolling it would lose every key. Scale to 3 members first, or create a new cluster", name)}
	}
	if healthy < Quorum(voting) && !alone {
		return Decision{Blocked: api.ReasonQuorumAtRisk, Message: fmt.Sprintf(
			"rolling member %s would leave %d healthy of %d voting members, less than a majority", name, healthy, voting)}
	}
	progress := fmt.Sprintf(" (%d of %d members done)", done, len(s.Members))
	evict := disrupts(s, m, alone)
	if d, ok := budgetHolds(s, m, reason, progress); ok && evict {
		return d
	}
	if m.Leader && m.Healthy && !alone {
		if t, ok := transferee(s, m); ok {
			d := step(s, Action{Kind: ActionMoveLeader, Ordinal: m.Ordinal, MemberID: m.ID, Transferee: t.ID},
				reason, "moving leadership away from %s before rolling it", m.Ordinal)
			d.Message += progress
			return d
		}
		return Decision{Blocked: api.ReasonQuorumAtRisk, Message: fmt.Sprintf(
			"member %s leads and no other healthy voting member can take over", name)}
	}
	return takeDown(s, m, reason, progress, inPlace, alone, evict)
}

// takeDown is the rollout's step on member m once it may be taken down: its image changed in
// place, its removal (to be replaced from a snapshot), or its pod deleted, through the
// Eviction API when that disrupts a member that serves (evict).
func takeDown(s State, m MemberView, reason api.ConditionReason, progress string, inPlace, alone, evict bool) Decision {
	if inPlace {
		d := step(s, Action{Kind: ActionRestartInPlace, Ordinal: m.Ordinal, MemberID: m.ID}, reason,
			"restarting member %s in place on its data", m.Ordinal)
		d.Message += fmt.Sprintf(" with etcd %s: only its image changes, its pod, address and data stay%s", s.TargetVersion, progress)
		return d
	}
	if s.Persistent && !alone && replacedOnUpgrade(s, m.Ordinal, m.ID) {
		d := removeVoter(s, m, reason)
		if d.Action != nil && d.Action.Kind == ActionRemoveMember {
			d.Message = fmt.Sprintf("replacing member %s: etcd %s cannot replay the log an older minor release may have left on its claim%s",
				naming.Name(s.Name, m.Ordinal), s.TargetVersion, progress)
		}
		return d
	}
	how := "replacing member %s"
	if s.Persistent {
		how = "restarting member %s on its data"
	}
	d := step(s, Action{Kind: ActionRollMember, Ordinal: m.Ordinal, MemberID: m.ID, Evict: evict}, reason, how, m.Ordinal)
	d.Message += fmt.Sprintf(" with etcd %s and the current pod template%s", s.TargetVersion, progress)
	if evict {
		d.Message += ", its pod evicted within the disruption budget"
		d = evictionRefusedTooLong(s, m.Ordinal, d)
	}
	return d
}

// transferee is the member leadership goes to from m: a healthy voting member already rolled,
// the highest ordinal first (so it is not moved again), else any healthy voting member.
func transferee(s State, m MemberView) (MemberView, bool) {
	var fallback *MemberView
	for _, t := range slices.Backward(SortedMembers(s.Members)) {
		if t.ID == m.ID || !t.Healthy || t.Learner {
			continue
		}
		if !s.Pods[t.Ordinal].Outdated {
			return t, true
		}
		if fallback == nil {
			fallback = &t
		}
	}
	if fallback == nil {
		return MemberView{}, false
	}
	return *fallback, true
}

func leaderMember(ms []MemberView) (MemberView, bool) {
	for _, m := range ms {
		if m.Leader {
			return m, true
		}
	}
	return MemberView{}, false
}

// notCaughtUp says why member m is not yet fit to count on before another member is rolled:
// not started, unhealthy, a learner, not on its pod's version, or behind the leader. Empty
// when it is fit.
func notCaughtUp(s State, m MemberView, leader MemberView) string {
	p := s.Pods[m.Ordinal]
	st, answered := s.Statuses[m.Ordinal]
	switch {
	case m.Learner:
		return "it is still a learner"
	case !m.Healthy || !answered:
		if p.Problem != nil && p.Problem.Reason == ReasonCrashLoop {
			return "its etcd container crash-loops: " + p.Problem.Message
		}
		if p.Waiting != "" {
			return "its etcd container waits: " + p.Waiting
		}
		return PodCondition(s.Pods, m.Ordinal)
	case p.RestartPending:
		return "the kubelet has not restarted its etcd container on the new image yet"
	case p.NotReady:
		// etcd answers before its readiness probe passes (a member restarted in place, on
		// its own address, answers at once); the next member waits for the probe too, so that
		// the client Service never has fewer members behind it than the rollout takes down.
		return "etcd answers, its pod is not Ready yet"
	case p.Version != "" && naming.NormalizeVersion(st.Version) != p.Version:
		return fmt.Sprintf("it reports etcd %s, its pod runs %s", st.Version, p.Version)
	}
	ls, ok := s.Statuses[leader.Ordinal]
	if !ok {
		return "the leader did not answer"
	}
	if ls.RaftIndex > st.RaftAppliedIndex+caughtUpLag {
		return fmt.Sprintf("it has applied raft index %d, the leader is at %d", st.RaftAppliedIndex, ls.RaftIndex)
	}
	return ""
}

// rolloutReason says what a rollout does: Upgrading or Downgrading when a member runs (or
// its pod was built for) another version than the target, RollingPods otherwise.
func rolloutReason(s State) api.ConditionReason {
	target, err := version.ParseGeneric(s.TargetVersion)
	if err != nil {
		return api.ReasonRollingPods
	}
	var versions []string
	for _, st := range s.Statuses {
		versions = append(versions, st.Version)
	}
	for _, p := range s.Pods {
		versions = append(versions, p.Version)
	}
	reason := api.ReasonRollingPods
	for _, v := range versions {
		pv, err := version.ParseGeneric(v)
		switch {
		case err != nil:
		case pv.LessThan(target):
			return api.ReasonUpgrading
		case target.LessThan(pv):
			reason = api.ReasonDowngrading
		}
	}
	return reason
}

// Rolling: a Progressing reason of a rollout.
func Rolling(r api.ConditionReason) bool {
	return r == api.ReasonUpgrading || r == api.ReasonDowngrading || r == api.ReasonRollingPods
}

// duringRollout reports a member restarted or replaced by rules 2, 5 and 7 while a rollout is
// under way as a step of the rollout, with how many members are done: the Progressing reason
// stays Upgrading (Downgrading, RollingPods) from the first member to the last.
func duringRollout(s State, d Decision) Decision {
	if d.Progress != api.ReasonRestartingMember && d.Progress != api.ReasonReplacingMember {
		return d
	}
	underway := false
	done := 0
	for _, m := range s.Members {
		p, ok := s.Pods[m.Ordinal]
		if ok && !p.Terminating && (p.Outdated || p.RestartPending) {
			underway = true
		} else if ok && !p.Terminating {
			done++
		}
	}
	for _, st := range s.Statuses {
		if naming.NormalizeVersion(st.Version) != s.TargetVersion {
			underway = true
		}
	}
	if !underway {
		return d
	}
	d.Progress = rolloutReason(s)
	d.Message += fmt.Sprintf(" (rollout: %d of %d members done)", done, s.Size)
	return d
}

// rolledAt is when the pod was last rolled: made, or its etcd image changed in place.
func (p PodView) rolledAt() time.Time {
	if p.RestartedAt.After(p.Created) {
		return p.RestartedAt
	}
	return p.Created
}
