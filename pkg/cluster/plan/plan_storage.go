package plan

import (
	"slices"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// The planner's rules about claims, for a cluster whose members keep their data on claims
// (State.Persistent). A claim's mark (ClaimView.MemberID) says whose data it holds; the
// operator writes it as soon as it sees the member listed, before any step that could remove
// that member, so a claim's data is never mistaken for another member's:
//
//   - a member still listed whose claim is intact (there, not being deleted, unmarked or
//     marked with its ID) is restarted in place on it: same member ID, no remove, no re-add;
//   - a member still listed whose claim is gone, being deleted, or marked with another ID has
//     lost its data: it is removed, and added again on a new claim;
//   - a claim marked with a member that is no longer listed holds a removed member's data,
//     which etcd refuses to start on: it is replaced (deleted, then made anew) before its
//     ordinal joins again;
//   - a claim that never bound, made from an earlier spec.storage, is replaced: nothing can
//     be on it, and its pod would wait for it forever.

// ClaimView is one member claim as a pass saw it.
type ClaimView struct {
	Ordinal     int
	Terminating bool
	// Bound: the claim has a volume. An unbound claim holds no data.
	Bound bool
	// Outdated: unbound, and made from a spec.storage that has changed since.
	Outdated bool
	// MemberID is the claim's mark: the etcd ID of the member whose data it holds; 0 when
	// unmarked.
	MemberID uint64
	// DataRanOn is the newest etcd minor release ("3.7") that member has been seen running
	// on with this claim's data (member.AnnotationDataRanOn); empty when not known.
	DataRanOn string
	// Removed: the claim is flagged (member.AnnotationRemoved) with the member it is marked
	// with, which the operator removed from etcd, or dropped recovering a quorum lost for
	// good, after writing the flag.
	Removed bool
	// Problem is why the claim waits for a volume (its latest Warning event), when it does.
	Problem string
}

// intactClaim reports whether the claim of ordinal o can hold the data of member id.
func intactClaim(s State, o int, id uint64) bool {
	c, ok := s.Claims[o]
	return ok && !c.Terminating && (c.MemberID == 0 || c.MemberID == id)
}

// planOutdatedClaims replaces a claim that never bound and was made from an earlier
// spec.storage (or when the spec no longer asks for claims): its pod goes first.
func planOutdatedClaims(s State) (Decision, bool) {
	for _, o := range SortedOrdinals(s.Claims) {
		c := s.Claims[o]
		if c.Bound || c.Terminating || (s.Persistent && !c.Outdated) {
			continue
		}
		if p, ok := s.Pods[o]; ok {
			if p.Terminating {
				return waiting(s, reasonFor(s, o), "waiting for pod %s to go before its claim is replaced", o), true
			}
			return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
				"deleting pod %s, whose claim was made from an earlier spec.storage and never bound", o), true
		}
		return step(s, Action{Kind: ActionDeleteClaim, Ordinal: o}, reasonFor(s, o),
			"deleting the claim of %s, made from an earlier spec.storage and never bound", o), true
	}
	return Decision{}, false
}

// planRestartInPlace recreates the pod of a voting member whose pod is gone and whose claim
// still holds its data: the member comes back with the same ID and peer URL, and catches up
// from the log. It is tried before the quorum rule: a pod is no membership change, and
// restarting members is how a cluster that lost its pods gets its quorum back.
func planRestartInPlace(s State) (Decision, bool) {
	if !s.Persistent {
		return Decision{}, false
	}
	var ordinals []int
	for _, m := range s.Members {
		ordinals = append(ordinals, m.Ordinal)
	}
	slices.Sort(ordinals)
	// A member whose old pod is still going does not hold back the others.
	going := -1
	for _, m := range SortedMembers(s.Members) {
		p, hasPod := s.Pods[m.Ordinal]
		if m.Learner || (hasPod && !p.Terminating) || !intactClaim(s, m.Ordinal, m.ID) {
			continue
		}
		if hasPod {
			if going < 0 {
				going = m.Ordinal
			}
			continue
		}
		var started uint64
		if m.Name != "" {
			started = m.ID
		}
		return step(s, Action{Kind: ActionCreatePod, Ordinal: m.Ordinal, ClusterState: etcdfacts.ClusterStateExisting,
			InitialCluster: ordinals, MemberID: started}, api.ReasonRestartingMember,
			"restarting member %s on its data", m.Ordinal), true
	}
	if going >= 0 {
		return waiting(s, api.ReasonRestartingMember, "waiting for the old pod of %s to go before restarting it on its data", going), true
	}
	return Decision{}, false
}

// restartMarked restarts, while no member answers, the members whose marked claims hold
// data and have no pod: a cluster whose pods all went (or an EtcdCluster deleted with
// whenDeleted Retain and applied again) comes back on its data. When status lists the
// members, only their claims count (a claim marked with a removed member holds data etcd
// refuses), and a voting member's pod says it has started, so that member-init refuses an
// empty data dir rather than wait for a member list that cannot come. Otherwise (no status)
// the pods do not claim their members have started: member-init starts etcd on the data it
// finds; and a claim flagged as its member's removed is not restarted (a member dropped by a
// survivor's --force-new-cluster, restarted with others like it, could elect a leader among
// them on their old data).
func restartMarked(s State) (Decision, bool) {
	known := map[int]LastMember{}
	for _, m := range s.LastMembers {
		known[m.Ordinal] = m
	}
	var marked []int
	for _, o := range SortedOrdinals(s.Claims) {
		c := s.Claims[o]
		m, isKnown := known[o]
		if c.MemberID != 0 && !c.Terminating && (len(known) == 0 && !c.Removed || (isKnown && m.ID == c.MemberID)) {
			marked = append(marked, o)
		}
	}
	going := -1
	for _, o := range marked {
		p, hasPod := s.Pods[o]
		var started uint64
		if m, ok := known[o]; ok && !m.Learner {
			started = m.ID
		}
		switch {
		case hasPod && p.Terminating && going < 0:
			going = o
		case !hasPod:
			return step(s, Action{Kind: ActionCreatePod, Ordinal: o, ClusterState: etcdfacts.ClusterStateExisting,
				InitialCluster: marked, MemberID: started}, api.ReasonRestartingMember, "restarting member %s on its data", o), true
		}
	}
	if going >= 0 {
		return waiting(s, api.ReasonRestartingMember, "waiting for the old pod of %s to go before restarting it on its data", going), true
	}
	return Decision{}, false
}

// dataGone reports whether voting member m has lost its data: its pod is gone and its claim
// cannot hold its data (or there is no claim: emptyDir), member-init found its data dir
// empty, or its claim is being deleted under it, or is gone under a pod that waits for it.
func dataGone(s State, m MemberView) bool {
	p, hasPod := s.Pods[m.Ordinal]
	switch {
	case !hasPod || p.Terminating:
		// A terminating pod's claim decides; without claims its emptyDir goes with it.
		return !s.Persistent || !intactClaim(s, m.Ordinal, m.ID)
	case p.DataLost:
		return true
	default:
		c, ok := s.Claims[m.Ordinal]
		return s.Persistent && ok && c.Terminating || claimGoneUnder(s, m.Ordinal)
	}
}

// claimGoneUnder: on claims, ordinal o's claim does not exist while its pod has been reported
// unschedulable for the bound (it waits for that claim: one deleted before the pod had a node
// goes at once, and the pod would wait for ever). The bound keeps a claim the cache has not
// shown yet from counting; a claim that exists schedules its pod, labelled or not.
func claimGoneUnder(s State, o int) bool {
	p, hasPod := s.Pods[o]
	_, hasClaim := s.Claims[o]
	return s.Persistent && !hasClaim && hasPod && p.Unschedulable() && podStuck(s, p)
}

// prepareClaim makes the claim of ordinal o, which is not a member, fit for a new member
// before its pod is made: a pod whose member-init found no data for its old member goes; a
// claim being deleted is waited for; a claim marked with a removed member is replaced (its
// pod first). ok is false when the claim (or its absence) is fine: CreatePod makes it.
func prepareClaim(s State, o int) (Decision, bool) {
	p, hasPod := s.Pods[o]
	if hasPod && !p.Terminating && p.DataLost {
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
			"deleting pod %s, whose member's data was lost", o), true
	}
	if hasPod && !p.Terminating && p.MemberID != 0 {
		// The pod ran a member that etcd no longer lists (removed, say for crash-looping):
		// whatever its data dir holds is that member's, which etcd refuses to start on.
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
			"deleting pod %s, which ran a member that was removed", o), true
	}
	c, ok := s.Claims[o]
	if !s.Persistent || !ok || (!c.Terminating && c.MemberID == 0) {
		return Decision{}, false
	}
	switch {
	case hasPod && !p.Terminating:
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, reasonFor(s, o),
			"deleting pod %s: its claim holds a removed member's data and is replaced", o), true
	case hasPod || c.Terminating:
		return waiting(s, reasonFor(s, o), "waiting for the old pod and claim of %s to go", o), true
	default:
		return step(s, Action{Kind: ActionDeleteClaim, Ordinal: o}, reasonFor(s, o),
			"replacing the claim of %s: it holds a removed member's data", o), true
	}
}

// planScaledClaims deletes, with whenScaled Delete, the claim of a member removed by a
// scale-down once its pod is gone. With Retain the claim stays; prepareClaim replaces it
// before the ordinal joins again.
func planScaledClaims(s State, members map[int]MemberView) (Decision, bool) {
	if !s.Persistent || !s.DeleteScaledClaims {
		return Decision{}, false
	}
	for _, o := range SortedOrdinals(s.Claims) {
		_, isMember := members[o]
		_, hasPod := s.Pods[o]
		if o < s.Size || isMember || hasPod || s.Claims[o].Terminating {
			continue
		}
		return step(s, Action{Kind: ActionDeleteClaim, Ordinal: o}, api.ReasonScalingDown,
			"deleting the claim of %s, removed by a scale-down (whenScaled: Delete)", o), true
	}
	return Decision{}, false
}

// claimHint is what a stuck rollout says a user can do about a member whose own data is at
// fault: on claims, delete its claim.
func claimHint(s State, o int) string {
	if !s.Persistent {
		return ""
	}
	return "; if its own data is at fault, " + deleteClaimCommand(s, o) + " has it replaced"
}

// deleteClaimCommand is the command that deletes the claim of ordinal o, which has its member
// replaced on a new claim.
func deleteClaimCommand(s State, o int) string {
	return "kubectl delete pvc " + namespaceFlag(s) + naming.ClaimName(s.Name, o)
}
