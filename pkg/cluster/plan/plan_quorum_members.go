package plan

// Which members a pass without a member list counts with (plan_quorum.go). status.members is
// written after the pass's step, and a status write may be dropped (a conflict) or never made
// (the operator killed first), so the members it lists may be one or more membership changes
// behind etcd: a member added, promoted or put in place of another since is missing, or listed
// as a learner. Counting only what status lists could then call a quorum lost for good while
// a majority of etcd's voters still hold their data, or choose a survivor with a lower raft
// index than a voter status does not list: writes lost.
//
// What is written before each membership step says more: a learner's claim is marked with its
// ID in the pass that adds it (markLearnerClaim), and a member's claim is flagged removed
// (member.AnnotationRemoved) before the operator removes it, or drops it with a survivor's
// --force-new-cluster. So every member etcd may still have is known from status or from a
// claim marked and not flagged. Those status does not show as voters are counted as voters
// whose data may be left, as long as their data is not gone (a member counted so adds to the
// members holding data, and so never makes a loss for good more likely than status alone
// would): a learner status listed, unless it answers as a learner; a member whose claim below
// spec.size is marked, not flagged removed and not being deleted, which status does not list.
// One in the place of a member status listed (its claim marked with it) was added after that
// member was removed: that member no longer counts. Each must answer before a survivor is
// chosen on its own (it may hold the highest raft index). They are not restarted while no
// member list answers (restartMarked restarts only what status lists): a claim left by a
// member removed before its claim could be flagged (by an operator release that did not flag,
// or by hand with etcdctl) could start an old member on old data, and several of them could
// elect a leader among themselves; and a mark does not say the member started (a learner's
// claim is marked before its etcd starts), so its pod could not tell member-init to refuse an
// empty data dir, and a member that lost its data could start again on none. Nothing but the
// user can tell those apart from a member added since status was written. So Degraded names
// each one the assessment waits for (missedMembers), with what to do: delete its claim if it
// is no member any more, or its data is gone (the loss is then assessed without it, and a
// survivor may be named); name a survivor when the loss is for good.

import (
	"fmt"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// countedVoters are the members a quorum loss is assessed over: the voting members status
// last listed, and those that may have become voters since (see above), in ordinal order.
func countedVoters(s State) []LastMember {
	listed := map[uint64]bool{}
	for _, m := range s.LastMembers {
		listed[m.ID] = true
	}
	replaced := map[int]bool{}
	var out []LastMember
	for _, o := range unlistedMarked(s, listed) {
		m := LastMember{Ordinal: o, ID: s.Claims[o].MemberID}
		if mayBeVoter(s, m) {
			out = append(out, m)
			replaced[o] = true
		}
	}
	for _, m := range s.LastMembers {
		switch {
		case replaced[m.Ordinal]:
		case !m.Learner:
			out = append(out, m)
		case mayBeVoter(s, m):
			out = append(out, LastMember{Ordinal: m.Ordinal, ID: m.ID, Version: m.Version})
		}
	}
	return sortedByOrdinal(out)
}

// unlistedMarked are the ordinals below spec.size whose claim, not being deleted, is marked
// with a member status does not list and not flagged as that member's removed; none when status lists no member (a cluster applied
// again over retained claims: the marks alone say nothing of how many members there were).
func unlistedMarked(s State, listed map[uint64]bool) []int {
	if len(s.LastMembers) == 0 {
		return nil
	}
	var out []int
	for _, o := range SortedOrdinals(s.Claims) {
		c := s.Claims[o]
		if o < s.Size && c.MemberID != 0 && !c.Terminating && !c.Removed && !listed[c.MemberID] {
			out = append(out, o)
		}
	}
	return out
}

// mayBeVoter: member m, which status does not show as a voter, may be one now, and its data
// may be left: it does not answer as a learner, and its data is not gone for good.
func mayBeVoter(s State, m LastMember) bool {
	if st, ok := s.Statuses[m.Ordinal]; ok && st.ID == m.ID && st.IsLearner {
		return false
	}
	return goneForGood(s, m) == ""
}

func sortedByOrdinal(ms []LastMember) []LastMember {
	byOrdinal := map[int]LastMember{}
	for _, m := range ms {
		byOrdinal[m.Ordinal] = m
	}
	out := make([]LastMember, 0, len(ms))
	for _, o := range SortedOrdinals(byOrdinal) {
		out = append(out, byOrdinal[o])
	}
	return out
}

// missedMembers names the members status does not list that countedVoters counts and that do
// not answer, with their claims and what to do; empty when there are none.
func missedMembers(s State) string {
	listed := map[uint64]bool{}
	for _, m := range s.LastMembers {
		listed[m.ID] = true
	}
	var names, claims []string
	for _, o := range unlistedMarked(s, listed) {
		m := LastMember{Ordinal: o, ID: s.Claims[o].MemberID}
		if st, ok := s.Statuses[o]; (ok && st.ID == m.ID) || !mayBeVoter(s, m) {
			continue
		}
		claim := naming.ClaimName(s.Name, o)
		names = append(names, fmt.Sprintf("%s (member %s on claim %s; %s)",
			naming.Name(s.Name, o), naming.FormatID(m.ID), claim, PodCondition(s.Pods, o)))
		claims = append(claims, claim)
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("waiting for members status.members does not list, whose claims say they may be voting members "+
		"(added since status was last written): %s; the operator does not restart a member status does not list while no member list answers "+
		"(it may have been removed). If its data is gone, or it is no member any more: kubectl delete pvc %s%s, "+
		"and the quorum loss is assessed without it (a loss for good is then recovered from a survivor, or on your word)",
		strings.Join(names, ", "), namespaceFlag(s), strings.Join(claims, " "))
}
