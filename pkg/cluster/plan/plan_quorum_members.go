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
// member removed before its claim could be flagged (by an operator release that did not flag)
// could start an old member on old data. Degraded names those the choice waits for; to go
// ahead, name a survivor, or delete the claim whose data is gone for good.

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
