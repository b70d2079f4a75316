package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// The planner is a pure function from what a pass observed to at most one action. It cannot
// do I/O (imports_test.go fails any import that could, and any read of the clock: the pass's
// time is State.Now), so every rule below is a table test in plan_test.go or in the test file
// of the rule's own file.
//
// Rules, in the order they are tried (the first that applies wins):
//
//  F. A pod or claim with a member's name that is not the cluster's (no controller reference
//     to it, not adopted, not a retained claim of the cluster): change nothing, and name it
//     (plan_foreign.go). A foreign Service, or a member pod whose IP answers for another
//     etcd cluster (pkg/cluster/clusterid.go), is reported but does not stop the planner.
//  0. A claim that never bound, made from an earlier spec.storage, is replaced (its pod
//     first): the spec of a cluster that never started may be fixed (plan_storage.go).
//  1. etcd unreachable: bootstrap the seed member <name>-0 if the cluster never had a member
//     and has no pod (restored from its snapshot, for spec.bootstrap.fromBackup: not created
//     while the snapshot cannot be found). A seed pod gone or failed before the cluster was ever seen serving
//     (nothing written down says it served) is bootstrapped again, the other pods deleted
//     first (so is a seed pod that cannot start, built from a spec fixed since); a cluster
//     that served never is. With claims, from the members status last listed (plan_quorum.go):
//     while a survivor restarted with --force-new-cluster starts, wait, and never make a
//     second; a cluster whose every member's data is gone is reported, never re-created;
//     a quorum lost for good (a majority's data gone, some left) is reported and recovered
//     from one survivor as spec.recovery.quorumLoss says. Then restart the members whose
//     claims hold their data and have no pod; otherwise wait. Nothing else is safe without
//     a member list.
//  2. Once etcd lists members again, a pod started with --force-new-cluster goes first: the
//     survivor restarts in place without the flag before anyone joins (a restart with it
//     would drop them). Delete pods that hold no member and never will: an ordinal at or
//     above spec.size (a removed member, or a join that is no longer wanted), or a pod that
//     failed for good. Then restart in place a voting member whose pod is gone and whose
//     claim holds its data: a new pod on the same claim, same member ID, no membership
//     change.
//  3. Without quorum, change nothing: every membership change needs a committed raft entry.
//  4. Pending learners are finished first (plan_learners.go): removed if the pod is gone,
//     cannot start past the bound, or the member is no longer wanted (learners do not vote,
//     so removing one is always safe), but none while another learner has not started yet;
//     promoted otherwise, one at a time, lowest ordinal first. Before a promotion, the next
//     member is added as a learner too when every learner has started and every member's
//     etcd, and the joining one's, lets the membership hold one more (etcd 3.6 or later
//     started with --max-learners; at most LearnerCap): etcd's check of an add waits for the
//     leader's connections to the voters, but not while the seed is the only voter.
//  5. A voting member that has lost its data (its pod is gone with its emptyDir or its claim,
//     or member-init found its data dir empty): remove it, moving leadership away first, so
//     that it can be added again under the same name, on a new claim.
//     A voting member whose pod has crash-looped past the bound (stuck.go: corrupt data,
//     "member removed") is replaced the same way; a pod restarted after a delete is new and
//     does not count, and without quorum rule 3 has stopped everything already. Only when
//     another healthy member runs a pod built from the same spec: else the crash may come
//     from the spec, and the rollout stops on it (or, the spec set back, rolls it back).
//  6. Scale down: remove the highest ordinal, after moving leadership away from it; then,
//     with whenScaled Delete, delete the claim of a removed member once its pod is gone.
//  7. Scale up (or re-add a replaced member): the lowest missing ordinal. A claim that holds
//     a removed member's data is replaced first. Its pod is created
//     first and member-init holds its etcd back; the member is registered as a learner
//     only once cluster DNS serves the pod's name, so no peer ever caches a negative answer
//     (a second learner, beside one, is rule 4's).
//     While a pod or a learner starts, the pods of the members after it are created too,
//     one per pass, so that they start (and their claims are provisioned) meanwhile. A pod that cannot be scheduled or
//     started (stuck.go) is never added as a learner, and neither it nor an old pod that does
//     not go holds back the other ordinals. Nothing joins while etcd's downgrade is enabled
//     (etcd refuses any joining member then): rule 8 finishes or cancels it first.
//  8. Rollout (plan_rollout.go), once the cluster is otherwise whole: labels and annotations
//     from spec.pod are patched in place first. Then one out-of-date member at a time (its
//     pod built from an earlier version or template), once every member rolled before is
//     back: a member that is down first, else the highest ordinal, the leader last
//     (leadership moved away first): its pod is deleted,
//     and rule 2 restarts it on its claim or rule 5 replaces it (emptyDir). Before each
//     member, every member must be started, healthy, voting, on its pod's version and caught
//     up with the leader; a rolled member that does not come back within a bound stops the
//     rollout, reported, until spec.version is set back. A step that takes a serving member
//     down waits while the disruption budget allows none, and the deletion of a serving
//     member's pod is an eviction, which the budget arbitrates against a drain's; an
//     eviction the API server has refused past the rollout's bound, from the first refusal
//     recorded on the pod, is still tried and reported (EvictionRefused) (plan_budget.go).
//  8b. Peers moved on or off TLS (plan_peer.go; spec.tls.peer added or removed on a running
//     cluster), once rule 8 has nothing to roll: each hop's pods are rolled by rule 8 to
//     listen on both its ends (the pass builds them so, from where etcd's member list puts
//     the URLs); then one member's peer URL per pass is moved (etcd's member update), only
//     when every member is in place, healthy and caught up, its pod listens where the URL
//     goes, the claims record the hop, the member Services forward the move port, and no
//     peer CA rotation runs. A URL move changes no membership and restarts nothing. A member
//     that joins meanwhile gets its URL where members are already (peermove.Step.Join).
//
// Every membership change is checked against quorum before it is proposed: a step that could
// leave fewer healthy voting members than a majority is refused with a reason.
//
// A CA rotation (rotation.go) is decided by the pass that keeps the certificates, before the
// rules: it changes what the members' Secrets trust, which makes their pods out of date for
// rule 8, and its waits between steps are reported when no rule has anything under way.

// Plan returns the one next step toward spec.size, or none. The rules are tried in the order
// listed at the top of this file; the first that applies decides.
func Plan(s State) Decision {
	return withPodVersion(s, withCertificates(s, withRotation(s, duringRollout(s, plan(s)))))
}

func plan(s State) Decision {
	if d, ok := planForeign(s); ok {
		return d
	}
	if d, ok := planOutdatedClaims(s); ok {
		return d
	}
	if !s.MembersKnown {
		return planUnreachable(s)
	}
	for _, m := range s.Members {
		if m.Ordinal < 0 {
			return Decision{Blocked: api.ReasonInvalidSpec, Message: fmt.Sprintf(
				"member %x has a peer URL the operator did not create; remove it by hand", m.ID)}
		}
	}
	if s.PeerMove.Step.Problem != "" {
		return Decision{Blocked: api.ReasonInvalidSpec, Message: s.PeerMove.Step.Problem + "; set the members' peer URLs back by hand"}
	}
	members := map[int]MemberView{}
	for _, m := range s.Members {
		members[m.Ordinal] = m
	}
	if d, ok := deleteForcedPod(s, members); ok {
		return d
	}
	if d, ok := planStrayPods(s, members); ok {
		return d
	}
	if d, ok := planRestartInPlace(s); ok {
		return d
	}

	// Rule 3: quorum.
	voting, healthy := VotingCounts(s.Members)
	if healthy < Quorum(voting) {
		return Decision{Blocked: api.ReasonNoQuorum, Message: fmt.Sprintf(
			"only %d of %d voting members are healthy; a majority is needed before any change",
			healthy, voting)}
	}

	if d, ok := planLearners(s); ok {
		return d
	}
	if d, ok := planDataGone(s); ok {
		return d
	}
	if d, ok := planCrashLooping(s); ok {
		return d
	}
	return planSize(s, members)
}

// planSize is rules 6 to 8, once every member is sound: scale down, scale up, then roll the
// members whose pods are out of date.
func planSize(s State, members map[int]MemberView) Decision {
	// Rule 6: scale down, highest ordinal first; then the removed members' claims.
	if len(s.Members) > s.Size {
		sorted := SortedMembers(s.Members)
		return removeVoter(s, sorted[len(sorted)-1], api.ReasonScalingDown)
	}
	if d, ok := planScaledClaims(s, members); ok {
		return d
	}

	// A member missing while etcd's downgrade is enabled, and too few voters left to roll one
	// more: the downgrade is cancelled, so that the member joins again (plan_downgrade.go).
	if d, ok := planDowngradeShort(s); ok {
		return d
	}
	// Rule 7: scale up or re-add, lowest missing ordinal first. Not while etcd's downgrade is
	// enabled: etcd lets no member join then (plan_downgrade.go), so the downgrade (rule 8)
	// finishes, or is cancelled, first.
	if d := planGrow(s, members); s.DowngradeTarget == "" && (d.Action != nil || d.Progress != "" || d.Blocked != "") {
		return d
	}
	// Rule 8: roll out-of-date member pods, one member at a time; then rule 8b: move a peer
	// URL, once every pod listens where it goes.
	if d := planRollout(s); d.Action != nil || d.Progress != "" || d.Blocked != "" {
		return d
	}
	return planPeerMove(s)
}

// planStrayPods is rule 2: delete a pod that holds no member and never will (an ordinal at or
// above spec.size), or a pod that failed for good.
func planStrayPods(s State, members map[int]MemberView) (Decision, bool) {
	for _, o := range SortedOrdinals(s.Pods) {
		p := s.Pods[o]
		if _, isMember := members[o]; isMember || p.Terminating {
			continue
		}
		if o >= s.Size {
			return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, api.ReasonScalingDown,
				"deleting pod %s, which holds no member", o), true
		}
	}
	for _, o := range SortedOrdinals(s.Pods) {
		p := s.Pods[o]
		if !p.Terminating && (p.Phase == corev1.PodFailed || p.Phase == corev1.PodSucceeded) {
			return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, api.ReasonReplacingMember,
				"deleting failed pod %s", o), true
		}
	}
	return Decision{}, false
}

func planUnreachable(s State) Decision {
	live := 0
	for _, p := range s.Pods {
		if !p.Terminating {
			live++
		}
	}
	if !s.Bootstrapped && len(s.Pods) == 0 && s.RestoreProblem != "" {
		return Decision{Blocked: api.ReasonRestoreFailed, Message: "the seed is not created: " + s.RestoreProblem}
	}
	if !s.Bootstrapped && len(s.Pods) == 0 {
		return step(s, Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: etcdfacts.ClusterStateNew,
			InitialCluster: []int{0}}, api.ReasonBootstrapping, "creating seed member %s", 0)
	}
	if d, ok := planBootstrapAgain(s); ok {
		return d
	}
	if !s.Bootstrapped {
		if p, ok := s.Pods[0]; ok && !p.Terminating && p.ClusterState == etcdfacts.ClusterStateNew {
			if d, ok := podAheadOf(s, []MemberView{{Ordinal: 0}}); ok {
				d.Progress = api.ReasonBootstrapping
				return d
			}
		}
		return waiting(s, api.ReasonBootstrapping, "waiting for seed member %s to start", 0)
	}
	if s.Persistent {
		if d, ok := waitForForcedSurvivor(s); ok {
			return d
		}
		switch q := assessQuorum(s); {
		case q.allGone():
			return Decision{Blocked: api.ReasonNoQuorum, Message: allLostMessage(s, q)}
		case q.forGood():
			return planQuorumLost(s, q)
		}
	}
	if d, ok := restartMarked(s); ok {
		return d
	}
	if d, ok := rollDownMemberInPlace(s); ok {
		return d
	}
	if live == 0 {
		return Decision{Blocked: api.ReasonNoQuorum,
			Message: "every member pod is gone; the cluster's data is lost and it will not be re-created silently"}
	}
	if d, ok := planNoLeader(s); ok {
		return d
	}
	return Decision{Blocked: api.ReasonEtcdUnreachable, Message: "no member answered; " + silent(s)}
}

// planBootstrapAgain bootstraps a cluster again whose seed pod went (deleted, evicted) before
// the cluster was ever seen serving. Whether it served is read from what was written down
// before any step that depends on it: status.size, a claim or pod marked with a member (see
// State.Bootstrapped). A cluster that never served holds no one's data, so it may start
// afresh; the pods made ahead for it go first, so that nothing from the first attempt meets
// the new seed. A cluster that served is never bootstrapped again (planUnreachable reports it).
func planBootstrapAgain(s State) (Decision, bool) {
	seed, hasSeed := s.Pods[0]
	switch {
	case s.Bootstrapped || (hasSeed && seed.Terminating):
		return Decision{}, false
	case hasSeed && (seed.Phase == corev1.PodFailed || seed.Phase == corev1.PodSucceeded):
		return step(s, Action{Kind: ActionDeletePod, Ordinal: 0}, api.ReasonBootstrapping,
			"deleting the seed's pod %s, which stopped before the cluster first served, to bootstrap again", 0), true
	case hasSeed && seed.Outdated && podStuck(s, seed) && seed.Problem.Reason != ReasonCrashLoop:
		// The spec was fixed (a repository, a version, a placement) since the seed's pod was
		// built from it, and the pod has not started past the bound: it goes, for a seed of the
		// current spec. Not one whose etcd ran (it crash-loops): it may have served.
		return step(s, Action{Kind: ActionDeletePod, Ordinal: 0}, api.ReasonBootstrapping,
			"deleting the seed's pod %s, which cannot start and was built from an earlier spec, to bootstrap again", 0), true
	case hasSeed:
		return Decision{}, false
	}
	for _, o := range SortedOrdinals(s.Pods) {
		if !s.Pods[o].Terminating {
			return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, api.ReasonBootstrapping,
				"the seed's pod is gone and the cluster never served: deleting pod %s to bootstrap again", o), true
		}
	}
	if len(s.Pods) > 0 {
		return waiting(s, api.ReasonBootstrapping,
			"the seed's pod is gone and the cluster never served: waiting for the other pods to go, from %s on, to bootstrap again",
			SortedOrdinals(s.Pods)[0]), true
	}
	return Decision{}, false
}

func reasonFor(s State, ordinal int) api.ConditionReason {
	if ordinal >= s.Size {
		return api.ReasonScalingDown
	}
	for _, m := range s.LastMembers {
		if m.Ordinal != ordinal {
			continue
		}
		if m.Learner && s.LastProgress == api.ReasonScalingUp && slices.ContainsFunc(s.Members, func(c MemberView) bool {
			return c.Ordinal == ordinal && c.ID == m.ID
		}) {
			// Status lists the learner the scale-up added (and reported as one): the same
			// scale-up, not a replacement of it.
			return api.ReasonScalingUp
		}
		// Status listed it as a member before: re-adding it replaces it.
		return api.ReasonReplacingMember
	}
	return api.ReasonScalingUp
}

// VotingCounts counts the voting members, and those of them that answered.
func VotingCounts(ms []MemberView) (voting, healthy int) {
	for _, m := range ms {
		if m.Learner {
			continue
		}
		voting++
		if m.Healthy {
			healthy++
		}
	}
	return voting, healthy
}

// Quorum is the majority of n voting members.
func Quorum(n int) int { return n/2 + 1 }

// step decides on an action; the message names the member it is about.
func step(s State, a Action, reason api.ConditionReason, format string, ordinal int) Decision {
	return Decision{Action: &a, Progress: reason, Message: fmt.Sprintf(format, naming.Name(s.Name, ordinal))}
}

// waiting decides on no action for now, and says what the cluster waits for.
func waiting(s State, reason api.ConditionReason, format string, ordinal int) Decision {
	return Decision{Progress: reason, Message: fmt.Sprintf(format, naming.Name(s.Name, ordinal))}
}

// SortedOrdinals are the ordinals a map by ordinal holds, in ascending order.
func SortedOrdinals[V any](byOrdinal map[int]V) []int {
	return slices.Sorted(maps.Keys(byOrdinal))
}

// SortedMembers are the members by ascending ordinal.
func SortedMembers(ms []MemberView) []MemberView {
	out := slices.Clone(ms)
	sort.Slice(out, func(i, j int) bool { return out[i].Ordinal < out[j].Ordinal })
	return out
}

// removeVoter removes a voting member, first moving leadership away if it leads, and only if
// the members left keep a healthy majority.
func removeVoter(s State, m MemberView, reason api.ConditionReason) Decision {
	voting, healthy := VotingCounts(s.Members)
	if m.Healthy {
		healthy--
	}
	if healthy < Quorum(voting-1) {
		return Decision{Blocked: api.ReasonQuorumAtRisk, Message: fmt.Sprintf(
			"removing member %s would leave %d healthy of %d voting members, less than a majority",
			naming.Name(s.Name, m.Ordinal), healthy, voting-1)}
	}
	if m.Leader && m.Healthy {
		for _, t := range SortedMembers(s.Members) {
			if t.ID != m.ID && t.Healthy && !t.Learner {
				return step(s, Action{Kind: ActionMoveLeader, Ordinal: m.Ordinal, MemberID: m.ID, Transferee: t.ID},
					reason, "moving leadership away from %s before removing it", m.Ordinal)
			}
		}
		return Decision{Blocked: api.ReasonQuorumAtRisk, Message: fmt.Sprintf(
			"member %s leads and no other healthy voting member can take over", naming.Name(s.Name, m.Ordinal))}
	}
	return step(s, Action{Kind: ActionRemoveMember, Ordinal: m.Ordinal, MemberID: m.ID}, reason,
		"removing member %s", m.Ordinal)
}
