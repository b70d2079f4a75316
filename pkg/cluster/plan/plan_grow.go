package plan

import (
	"slices"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// Rule 7 of the planner (see plan.go): grow toward spec.size one member at a time, lowest
// missing ordinal first, with the pod of the next member made ahead while one starts.

// podAhead creates, ahead of time, the pods of the members to be added after the members
// `members` (every ordinal from `from` on, below spec.size, that is not one of them), while a
// member before them is still starting: each is scheduled, gets its volume provisioned, its IP
// and its DNS record in the meantime, and member-init holds its etcd back until the member is
// registered. Each pod's initial cluster counts the ordinals before it as members, since they
// are added in that order; a pod whose membership turns out otherwise is made again by
// planGrow. One pod per pass, lowest ordinal first. No membership changes: a member is still
// added only once the one before it is promoted. The pod's member-init asks the members by
// name, and dials them only once cluster DNS serves their names, so their records need not be
// published yet: an early lookup cannot cache a negative answer.
func podAhead(s State, members []int, from int) (Decision, bool) {
	want := slices.Clone(members)
	for o := from; o < s.Size; o++ {
		if slices.Contains(members, o) {
			continue
		}
		want = append(want, o)
		sort.Ints(want)
		if p, exists := s.Pods[o]; exists {
			if p.Terminating {
				// The ordinals after it would be made for a membership that waits on it.
				return Decision{}, false
			}
			continue
		}
		if d, ok := prepareClaim(s, o); ok {
			// Replacing a claim ahead is fine; waiting for one is not worth saying here.
			return d, d.Action != nil
		}
		return step(s, Action{Kind: ActionCreatePod, Ordinal: o, ClusterState: etcdfacts.ClusterStateExisting,
			InitialCluster: slices.Clone(want)}, reasonFor(s, o), "creating pod %s ahead of its member", o), true
	}
	return Decision{}, false
}

// podAheadOf creates the next member's pod ahead while the members `starting` start (the
// seed, or a learner): only when each of them has a live pod.
func podAheadOf(s State, starting []MemberView) (Decision, bool) {
	var members []int
	for _, m := range starting {
		if p, ok := s.Pods[m.Ordinal]; !ok || p.Terminating {
			return Decision{}, false
		}
		members = append(members, m.Ordinal)
	}
	return podAhead(s, members, 0)
}

func planGrow(s State, members map[int]MemberView) Decision {
	var current []int
	for o := range members {
		current = append(current, o)
	}
	stuck, going := -1, -1
	for o := 0; o < s.Size; o++ {
		if _, ok := members[o]; ok {
			continue
		}
		want := append(slices.Clone(current), o)
		sort.Ints(want)
		if d, ok := prepareClaim(s, o); ok {
			return d
		}
		p, hasPod := s.Pods[o]
		if hasPod && !p.Terminating {
			if d, ok := remakePod(s, o, p, want); ok {
				return d
			}
		}
		switch {
		case !hasPod:
			return step(s, Action{Kind: ActionCreatePod, Ordinal: o, ClusterState: etcdfacts.ClusterStateExisting,
				InitialCluster: want}, reasonFor(s, o), "creating pod %s", o)
		case p.Terminating:
			// A pod that does not go (its node stopped answering) must not hold back the
			// other ordinals: status says what the user must do about it.
			if going < 0 {
				going = o
			}
		case p.Problem != nil:
			// A pod that cannot be scheduled or started must not hold back the other
			// ordinals, and never becomes a learner that would take etcd's one learner slot.
			if stuck < 0 {
				stuck = o
			}
		case p.Published:
			return step(s, Action{Kind: ActionAddLearner, Ordinal: o}, reasonFor(s, o),
				"adding member %s as a learner", o)
		default:
			// The pod of the member after this one starts meanwhile.
			if d, ok := podAhead(s, want, o+1); ok {
				return d
			}
			return waiting(s, reasonFor(s, o), "waiting for pod %s to start and be reachable at its Service's name", o)
		}
	}
	return waitForHeldBack(s, stuck, going)
}

// remakePod deletes the pod made for ordinal o, which joins as a member of want, when it
// cannot join as it is: it is made again on the next pass.
func remakePod(s State, o int, p PodView, want []int) (Decision, bool) {
	switch {
	case p.ClusterState != etcdfacts.ClusterStateExisting || !slices.Equal(p.InitialCluster, want):
		// Its etcd would be refused (or worse, bootstrap a cluster of its own):
		// member-init still holds it back, so the pod can go.
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
			"deleting pod %s, created for a membership that has changed", o), true
	case claimGoneUnder(s, o):
		// Claims are made with their pod: this one's went before the pod had a node.
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
			"deleting pod %s, whose claim is gone, to make both again", o), true
	case joinLacksFlag(s, o, p):
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
			"deleting pod %s, built without --max-learners while other member pods run with it: the log it would take may hold the add of a second learner (see docs/upgrades.md)", o), true
	case p.Problem != nil && p.Outdated:
		// It holds no member, and the spec has changed since it was built (a fix of
		// spec.pod or spec.version): it is made again from the current one.
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
			"deleting pod %s, which cannot start and was built from an earlier spec", o), true
	}
	return Decision{}, false
}

// waitForHeldBack says what growing waits for once no ordinal can move: the first pod that
// cannot start (stuck), else the first old pod that does not go (going); -1 for none.
func waitForHeldBack(s State, stuck, going int) Decision {
	switch {
	case stuck >= 0:
		return waiting(s, reasonFor(s, stuck), "waiting for pod %s, which cannot start ("+escape(s.Pods[stuck].Problem.String())+")", stuck)
	case going >= 0:
		return waiting(s, reasonFor(s, going), "waiting for the old pod %s to go", going)
	}
	return Decision{}
}

// escape keeps a message taken from a pod from being read as a format.
func escape(s string) string { return strings.ReplaceAll(s, "%", "%%") }
